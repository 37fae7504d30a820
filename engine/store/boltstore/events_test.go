package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
)

// storedEvent is an event as the file holds it.
type storedEvent struct {
	seq   uint64
	json  []byte // as stored, without the batch's newline
	event queue.Event
	batch []byte // the key of its batch
}

// storedEvents returns every event in the file, in key order, checking
// that each batch's key matches its events.
func storedEvents(tb testing.TB, tx *bolt.Tx) []storedEvent {
	tb.Helper()
	var out []storedEvent
	eb := tx.Bucket(bucketEvents)
	cur := eb.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		val, err := batchValue(eb, k, v)
		if err != nil {
			tb.Fatal(err)
		}
		err = eachEvent(k, val, 0, func(seq uint64, j []byte) (bool, error) {
			var e queue.Event
			if err := json.Unmarshal(j, &e); err != nil {
				return false, err
			}
			if e.Seq != seq {
				tb.Errorf("batch %x: event %d where %d belongs", k, e.Seq, seq)
			}
			out = append(out, storedEvent{seq: seq, json: append([]byte(nil), j...), event: e, batch: append([]byte(nil), k...)})
			return true, nil
		})
		if err != nil {
			tb.Fatalf("batch %x: %v", k, err)
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].seq <= out[i-1].seq {
			tb.Errorf("stored events out of order: %d after %d", out[i].seq, out[i-1].seq)
		}
	}
	return out
}

// addEvents appends n events and flushes them: one batch (more past
// maxBatchEvents), stored as a plain value or, past maxInline, in a
// bucket of its own.
func (e *env) addEvents(n int, reason string) {
	e.tb.Helper()
	for i := range n {
		e.q.AppendEvent("pool", "cloud_error", "i-1", "create", reason+string(rune('a'+i%26)))
	}
	if err := e.q.Flush(); err != nil {
		e.tb.Fatal(err)
	}
}

// fileEvents reads every event in the file, checking each batch's key
// against its events.
func (e *env) fileEvents() []storedEvent {
	e.tb.Helper()
	var out []storedEvent
	if err := e.s.db.View(func(tx *bolt.Tx) error {
		out = storedEvents(e.tb, tx)
		return nil
	}); err != nil {
		e.tb.Fatal(err)
	}
	return out
}

func eventsOf(s []storedEvent) []queue.Event {
	out := make([]queue.Event, len(s))
	for i := range s {
		out[i] = s[i].event
	}
	return out
}

// Reading from the file: every since (at, inside and between batches of
// every kind) and several limits give what a read of the whole log cut
// at since and limit gives; so do the newest events loaded at Open.
func TestEventsFromBatches(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.EventsInMemory = 1 })
	for _, n := range []int{1, 3, 20, 1, 2, 40, 1} {
		e.addEvents(n, "r")
	}
	stored := e.fileEvents()
	all := eventsOf(stored)
	if len(all) != 68 {
		t.Fatalf("%d events stored, want 68", len(all))
	}
	kinds := map[bool]int{}
	batches := map[string]bool{}
	if err := e.s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			kinds[v == nil]++
			batches[string(k)] = true
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if len(batches) != 7 || kinds[true] != 2 {
		t.Fatalf("%d batches, %d in buckets of their own; want 7 and 2 (of 20 and 40 events)", len(batches), kinds[true])
	}
	check := func(label string) {
		for since := uint64(0); since <= uint64(len(all))+1; since++ {
			for _, limit := range []int{1, 2, 5, 19, 1000} {
				got, err := e.q.Events(since, limit)
				if err != nil {
					t.Fatalf("%s: Events(%d, %d): %v", label, since, limit, err)
				}
				want := all[min(int(since), len(all)):]
				want = want[:min(limit, len(want))]
				if len(want) == 0 {
					want = nil
				}
				if len(got) == 0 {
					got = nil
				}
				wantEqual(t, fmt.Sprintf("%s: Events(%d, %d)", label, since, limit), got, want)
			}
		}
	}
	check("live")
	// What Open keeps in memory is the end of the file's log, whatever
	// batch it starts in.
	for _, mem := range []int{1, 2, 3, 20, 21, 45, 68, 1000} {
		e.close()
		e.opts.EventsInMemory = mem
		e.q = e.open()
		wantEqual(t, fmt.Sprintf("in memory at open (%d)", mem), e.loaded, all[max(0, len(all)-mem):])
		if e.loadedNext != 69 {
			t.Fatalf("next event %d after reopen, want 69", e.loadedNext)
		}
		check(fmt.Sprintf("reopened with %d in memory", mem))
	}
}

// A write's events are cut into batches of consecutive Seqs (another
// writer took the ones between), so that batches never overlap; and at
// most maxBatchEvents each.
func TestPutEventsCutsAtGaps(t *testing.T) {
	seqs := func(ss ...uint64) []queue.Event {
		out := make([]queue.Event, len(ss))
		for i, s := range ss {
			out[i] = queue.Event{Seq: s, Time: t0, Actor: "a", Kind: "k", Target: "t", Action: "x"}
		}
		return out
	}
	long := make([]uint64, maxBatchEvents+2)
	for i := range long {
		long[i] = uint64(100 + i)
	}
	for _, c := range []struct {
		name   string
		events []queue.Event
		want   [][2]uint64
		err    bool
	}{
		{"one", seqs(7), [][2]uint64{{7, 7}}, false},
		{"gaps", seqs(1, 2, 5, 6, 7, 9), [][2]uint64{{1, 2}, {5, 7}, {9, 9}}, false},
		{"long", seqs(long...), [][2]uint64{{100, 100 + maxBatchEvents - 1}, {100 + maxBatchEvents, 101 + maxBatchEvents}}, false},
		{"out of order", seqs(1, 2, 2), nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			var got [][2]uint64
			var b store.Batch
			for _, ev := range c.events {
				j, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				b.EndEvent(ev.Seq, append(b.BeginEvent(), j...))
			}
			err := e.s.db.Update(func(tx *bolt.Tx) error {
				if err := putEvents(tx.Bucket(bucketEvents), &b); err != nil {
					return err
				}
				return tx.Bucket(bucketEvents).ForEach(func(k, _ []byte) error {
					f, l, _ := batchRange(k)
					got = append(got, [2]uint64{f, l})
					return nil
				})
			})
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want an error: %v", err, c.err)
			}
			if err == nil {
				wantEqual(t, "batches", got, c.want)
				if evs := eventsOf(e.fileEvents()); !reflect.DeepEqual(evs, c.events) {
					t.Fatalf("stored %d events, want %d as written", len(evs), len(c.events))
				}
				// Reads from every since, in a gap or not.
				last := c.events[len(c.events)-1].Seq
				for since := uint64(0); since <= last+1; since++ {
					var got []queue.Event
					if err := e.s.db.View(func(tx *bolt.Tx) error {
						return readEvents(tx.Bucket(bucketEvents), since, func(seq uint64, j []byte) (bool, error) {
							var ev queue.Event
							err := json.Unmarshal(j, &ev)
							got = append(got, ev)
							return len(got) < 3, err
						})
					}); err != nil {
						t.Fatalf("readEvents(%d): %v", since, err)
					}
					var want []queue.Event
					for _, ev := range c.events {
						if ev.Seq > since && len(want) < 3 {
							want = append(want, ev)
						}
					}
					wantEqual(t, fmt.Sprintf("readEvents(%d, 3)", since), got, want)
				}
			}
		})
	}
}

// Retention deletes whole batches, oldest first, once all their events
// are past the cut, and at most store.MaxDeletesPerFlush events per flush (but a batch
// larger than that still goes).
func TestEventRetentionByBatches(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.EventsInMemory = 5 })
	e.addEvents(3*maxBatchEvents+10, "backlog ") // four batches, 12,298 events
	e.addEvents(1, "x")
	if n := len(e.fileEvents()); n != 3*maxBatchEvents+11 {
		t.Fatalf("%d events stored, want all", n)
	}
	e.close()
	e.sopts.EventRetention = 15
	e.q = e.open()
	// The first flush deletes two batches of 4096 (a third would pass
	// store.MaxDeletesPerFlush); the third has events among the newest 15 until three
	// more are written, and then goes alone.
	e.addEvents(1, "y")
	want := func(label string, n int, from uint64) {
		t.Helper()
		if got := e.fileEvents(); len(got) != n || got[0].seq != from {
			t.Fatalf("%s: %d events from %d; want %d from %d", label, len(got), got[0].seq, n, from)
		}
	}
	want("after one flush", maxBatchEvents+12, 2*maxBatchEvents+1)
	e.addEvents(1, "z")
	want("after two flushes", maxBatchEvents+13, 2*maxBatchEvents+1)
	e.addEvents(3, "z")
	want("after three flushes", 16, 3*maxBatchEvents+1)
	// From here each flush keeps at least the newest 15, and deletes a
	// batch as soon as all of it is older.
	for i, n := range []int{4, 6, 1, 9, 2, 7, 30, 1, 1} {
		e.addEvents(n, "w")
		got := e.fileEvents()
		newest := got[len(got)-1].seq
		cut := newest - 15
		if got[0].seq > cut+1 {
			t.Fatalf("flush %d: oldest stored %d, newest %d: fewer than 15 kept", i, got[0].seq, newest)
		}
		first := got[0].batch
		for _, ev := range got {
			if bytes.Equal(ev.batch, first) && ev.seq > cut {
				break
			}
			if !bytes.Equal(ev.batch, first) {
				t.Fatalf("flush %d: batch %x is all at or before the cut %d and was kept", i, first, cut)
			}
		}
	}
	e.reopen()
	if got := e.fileEvents(); !reflect.DeepEqual(e.loaded, eventsOf(got)[len(got)-5:]) {
		t.Fatalf("after reopen, in memory: %+v", e.loaded)
	}
}

// A flush that fails takes its events back; the retry writes them, with
// those added meanwhile, once and in order.
func TestFailedFlushEventsRetried(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.EventsInMemory = 2 })
	e.addEvents(3, "a")
	// A bucket where the next batch's value goes makes the flush fail.
	block := eventBatchKey(4, 5)
	if err := e.s.db.Update(func(tx *bolt.Tx) error {
		_, err := tx.Bucket(bucketEvents).CreateBucket(block)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	e.q.AppendEvent("pool", "k", "t", "a", "4")
	e.q.AppendEvent("pool", "k", "t", "a", "5")
	if err := e.q.Flush(); err == nil {
		t.Fatal("flush succeeded over the blocking bucket")
	}
	if err := e.s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEvents).DeleteBucket(block)
	}); err != nil {
		t.Fatal(err)
	}
	e.q.AppendEvent("pool", "k", "t", "a", "6")
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	// The failed flush also said the store is unavailable (storehealth.go),
	// in the event after the retried ones.
	got := e.fileEvents()
	if len(got) != 7 {
		t.Fatalf("%d events stored, want 7", len(got))
	}
	for i, ev := range got {
		var ok bool
		switch {
		case i < 3:
			ok = true
		case i < 5:
			ok = ev.event.Reason == fmt.Sprint(i+1)
		case i == 5:
			ok = ev.event.Kind == queue.StoreEventKind && ev.event.Action == queue.StoreEventUnavailable
		default:
			ok = ev.event.Reason == "6"
		}
		if ev.seq != uint64(i+1) || !ok {
			t.Fatalf("event %d stored as %+v", i+1, ev.event)
		}
	}
	if _, l, _ := batchRange(got[6].batch); !bytes.Equal(got[3].batch, got[6].batch) || l != 7 {
		t.Fatalf("the retried events and the new one: batches %x, %x; want one", got[3].batch, got[5].batch)
	}
	all := e.events()
	e.reopen()
	wantEqual(t, "events after reopen", e.events(), all)
}

// writeLegacyEvents stores events as the previous layout did: one per
// 8-byte Seq in the "events" bucket, the JSON alone.
func writeLegacyEvents(tb testing.TB, path string, events []queue.Event) {
	tb.Helper()
	updateFile(tb, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketLegacyEvents)
		if err != nil {
			return err
		}
		for i := range events {
			v, err := json.Marshal(&events[i])
			if err != nil {
				return err
			}
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], events[i].Seq)
			if err := b.Put(k[:], v); err != nil {
				return err
			}
		}
		return nil
	})
}

func legacyEvents(from, to uint64, reason string) []queue.Event {
	var out []queue.Event
	for s := from; s <= to; s++ {
		out = append(out, queue.Event{Seq: s, Time: t0.Add(time.Duration(s) * time.Second), Actor: "old", Kind: "verb",
			Target: "scheduler", Action: "pause", Reason: fmt.Sprint(reason, s)})
	}
	return out
}

// A store of the previous layout is migrated at Open: its events (gaps
// kept) become batches and its bucket goes, so that the previous binary
// finds none to misread. Events that binary writes after a downgrade
// (numbered from 1 again) are migrated after the newest batch.
func TestMigrateLegacyEvents(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.EventsInMemory = 3 })
	e.close()
	old := append(legacyEvents(1, 5000, "old "), legacyEvents(5003, 5010, "old ")...) // a gap: a failed submit's
	writeLegacyEvents(t, e.sopts.Path, old)
	e.q = e.open()
	wantEqual(t, "in memory after the migration", e.loaded, old[len(old)-3:])
	wantEqual(t, "stored after the migration", eventsOf(e.fileEvents()), old)
	wantEqual(t, "read after the migration", e.events(), old)
	if err := e.s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketLegacyEvents) != nil {
			t.Error("the old events bucket is still there")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.q.AddEvent("pool", "k", "t", "a", ""); err != nil {
		t.Fatal(err)
	}
	if ev := e.lastEvent(); ev.Seq != 5011 {
		t.Fatalf("next event numbered %d, want 5011", ev.Seq)
	}
	before := e.events()

	// A downgrade: the previous binary wrote three events, from 1.
	e.close()
	writeLegacyEvents(t, e.sopts.Path, legacyEvents(1, 3, "downgraded "))
	e.q = e.open()
	got := e.events()
	wantEqual(t, "the events before the downgrade", got[:len(before)], before)
	after := got[len(before):]
	if len(after) != 3 {
		t.Fatalf("%d events after the downgrade's, want 3", len(after))
	}
	for i, ev := range after {
		want := legacyEvents(uint64(i+1), uint64(i+1), "downgraded ")[0]
		want.Seq = 5012 + uint64(i)
		wantEqual(t, "renumbered", ev, want)
	}
	e.reopen()
	wantEqual(t, "after another reopen", e.events(), got)
}

// A batch is written once: the next flush appends its own batch and
// leaves the pages of the one before alone.
func TestEventBatchWrittenOnce(t *testing.T) {
	e := newEnv(t, nil)
	e.addEvents(10, "warm")
	var size int
	for range 4 {
		for i := range 3000 {
			e.q.AppendEvent("scheduler", "state", fmt.Sprintf("c-%016x", i), "Running", "")
		}
		st := e.s.db.Stats()
		before := st.TxStats.GetPageAlloc()
		if err := e.q.Flush(); err != nil {
			t.Fatal(err)
		}
		st = e.s.db.Stats()
		alloc := st.TxStats.GetPageAlloc() - before
		if err := e.s.db.View(func(tx *bolt.Tx) error {
			k, v := tx.Bucket(bucketEvents).Cursor().Last()
			v, err := batchValue(tx.Bucket(bucketEvents), k, v)
			size = len(v)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// The batch, rounded up to pages, and a few pages besides (the
		// events bucket's leaf, the root's, the meta bucket's, freelist).
		page := int64(e.s.db.Info().PageSize)
		if limit := int64(size) + 8*page; alloc > limit {
			t.Fatalf("a flush of a %d-byte batch allocated %d bytes (more than %d): earlier batches rewritten?", size, alloc, limit)
		}
	}
}
