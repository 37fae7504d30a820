package boltstore

import (
	"dispatch-tui/engine/view"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
)

// journalLenInFile counts the journal's entries (records and tombstones)
// in the (closed) store file.
func journalLenInFile(tb testing.TB, path string) int {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketJournal); b != nil {
			_, jn, err := readJournal(b, 0)
			n = jn
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// Random churn — submits, every transition, priority changes, holds,
// kills, drops of finished containers, folds (explicit, and by passes past
// a small threshold) — with crashes and clean reopens at random points:
// every reopen finds each container as it was in memory after the last
// flush, and a dropped container never comes back.
func TestJournalChurnCrashReopen(t *testing.T) {
	for seed := range uint64(12) {
		// Seeds 6 and up play a large store: no rebuild, the journal
		// kept at a small window folded oldest first (foldOldest).
		large := seed >= 6
		t.Run(fmt.Sprint("seed=", seed, " large=", large), func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.KeepFinished = 4; o.Store.NoSync = true; o.Store.FoldByHand = large })
			rng := rand.New(rand.NewPCG(seed, 7))
			foldMin := 1 + rng.IntN(40)
			window := 1 + rng.IntN(20)
			// Odd seeds cut batches small (putBatches): several a flush.
			batchMax := 0
			if seed%2 == 1 {
				batchMax = 1 + rng.IntN(3000)
			}
			// Large stores fold by hand, as many of a fold's transactions
			// after each flush as the folder might have run meanwhile.
			// Odd large seeds fold a record a transaction, one a flush: a
			// fold goes on over several flushes, and crashes fall in the
			// middle of one.
			foldChunk := 0
			e.foldSteps = 8
			if large && seed%2 == 1 {
				foldChunk, e.foldSteps = 1, 1
			}
			setFold := func() {
				e.s.opts.FoldMin = foldMin
				e.s.opts.BatchMax = batchMax
				if large {
					e.s.opts.RebuildMax, e.s.opts.JournalKeep, e.s.opts.FoldChunk = 1, window, foldChunk
				}
			}
			setFold()
			dropped := map[string]bool{}
			var ids []string
			live := func() []string {
				out := ids[:0]
				for _, id := range ids {
					if _, ok := e.q.Get(id); ok {
						out = append(out, id)
					} else {
						dropped[id] = true
					}
				}
				ids = out
				return ids
			}
			check := func(step int, want map[string]view.Container) {
				t.Helper()
				got := e.snapshot()
				for id := range got {
					if dropped[id] {
						t.Fatalf("step %d: dropped container %s came back", step, id)
					}
				}
				wantEqual(t, fmt.Sprintf("step %d: containers after reopen", step), got, want)
			}
			for step := range 400 {
				switch r := rng.IntN(20); {
				case r < 4:
					n := 1 + rng.IntN(3)
					specs := make([]queue.Spec, n)
					for i := range specs {
						specs[i] = queue.Spec{Command: []string{"true"}, Priority: new(rng.IntN(5))}
					}
					cs, err := e.q.SubmitBatch(specs, "test")
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range cs {
						ids = append(ids, c.ID)
					}
				case r < 12:
					// A pass with a few random transitions; illegal ones
					// are refused and write nothing.
					e.pass(func(tx *queue.Tx) {
						for range 1 + rng.IntN(4) {
							act := tx.Active()
							if len(act) == 0 {
								return
							}
							c := act[rng.IntN(len(act))]
							switch rng.IntN(8) {
							case 0:
								_ = tx.Lock(c, "small")
							case 1:
								_ = tx.Run(c, fmt.Sprint("i-", rng.IntN(9)), "small")
							case 2:
								_ = tx.Finish(c, rng.IntN(2), tx.Now())
							case 3:
								_ = tx.Cancel(c, queue.ReasonKilled, "test")
							case 4:
								_ = tx.Requeue(c, "test")
							case 5:
								_ = tx.Unlock(c)
							case 6:
								tx.RequestKill(c, "test")
							case 7:
								tx.MarkSeen(c)
							}
						}
					})
					e.clk.Advance(1e9)
				case r < 16:
					l := live()
					if len(l) == 0 {
						continue
					}
					id := l[rng.IntN(len(l))]
					switch rng.IntN(4) {
					case 0:
						_, _ = e.q.SetPriority(id, rng.IntN(5), "test", "")
					case 1:
						_, _ = e.q.Hold(id, "test", "")
					case 2:
						_, _ = e.q.Release(id, "test", "")
					case 3:
						_, _ = e.q.Kill(id, "test", "")
					}
				case r < 17:
					if err := e.s.fold(); err != nil {
						t.Fatal(err)
					}
				case r < 19:
					live()
					if err := e.q.Flush(); err != nil {
						t.Fatal(err)
					}
					want := e.snapshot()
					e.crash()
					e.q = e.open()
					setFold()
					// A fold waits for foldAfter entries beyond the
					// window (twice that but in a pass's flush).
					if most := window + 2*e.s.foldAfter(int(e.s.records.Load())); large && foldChunk == 0 && e.s.journalLen > most {
						t.Fatalf("step %d: %d journal entries after a crash, want at most the window and twice foldAfter, %d", step, e.s.journalLen, most)
					}
					check(step, want)
				default:
					live()
					if err := e.q.Flush(); err != nil {
						t.Fatal(err)
					}
					want := e.snapshot()
					e.reopen()
					setFold()
					if n := e.s.journalLen; n != 0 {
						t.Fatalf("step %d: %d journal entries after a clean close", step, n)
					}
					check(step, want)
				}
			}
			live()
			if len(dropped) == 0 {
				t.Error("no container was dropped: the test does not cover drops")
			}
		})
	}
}

// A clean Close folds the journal: the file's containers bucket alone
// holds every record (what a binary that predates the journal reads).
func TestJournalCloseFolds(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for _, c := range e.submitN(6) {
		ids = append(ids, c.ID)
	}
	e.pass(func(tx *queue.Tx) {
		for _, id := range ids[:3] {
			toggleLock(t, tx, tx.Get(id))
		}
	})
	if _, err := e.q.Hold(ids[3], "operator:alice", "wait"); err != nil {
		t.Fatal(err)
	}
	if e.s.journalLen == 0 {
		t.Fatal("the fixture's changes are not in the journal")
	}
	want := e.snapshot()
	e.close()
	if n := journalLenInFile(t, e.sopts.Path); n != 0 {
		t.Fatalf("%d journal entries after Close, want 0", n)
	}
	if got := fileContainerKeys(t, e.sopts.Path); len(got) != len(ids) {
		t.Fatalf("containers bucket holds %d records, want %d", len(got), len(ids))
	}
	// A binary that knew nothing of the journal did not create it: the
	// store opens the same, and the bucket is created.
	db, err := bolt.Open(e.sopts.Path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketJournal) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	e.q = e.open()
	wantEqual(t, "containers after reopening a store without a journal", e.snapshot(), want)
	if !e.q.SetLogsError(ids[0], "lost") {
		t.Fatal("SetLogsError changed nothing")
	}
	e.crash()
	if n := journalLenInFile(t, e.sopts.Path); n == 0 {
		t.Fatal("a flush after reopening wrote no journal entry")
	}
}

// oldEntry is a journal entry as the binary before batches wrote it: the
// Seq, then the JSON (none for a tombstone).
type oldEntry struct {
	seq  uint64
	body []byte
}

// appendOldEntries writes entries to the journal of the (closed) store
// file, after its last key, each under its own key, as a crash of the
// binary before batches leaves them.
func appendOldEntries(tb testing.TB, path string, entries []oldEntry) {
	tb.Helper()
	updateFile(tb, path, func(tx *bolt.Tx) error {
		jb := tx.Bucket(bucketJournal)
		next := uint64(0)
		if k, _ := jb.Cursor().Last(); k != nil {
			next = binary.BigEndian.Uint64(k) + 1
		}
		for _, e := range entries {
			v := binary.BigEndian.AppendUint64(nil, e.seq)
			if err := jb.Put(journalKey(next), append(v, e.body...)); err != nil {
				return err
			}
			next++
		}
		return nil
	})
}

// journalKinds counts the values of the (closed) store file's journal by
// kind: entries of the layout before batches, batches stored as values,
// and batches in buckets of their own.
func journalKinds(tb testing.TB, path string) (old, inline, own int) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJournal).ForEach(func(k, v []byte) error {
			switch {
			case v == nil:
				own++
			case v[0] == store.BatchMarker:
				inline++
			default:
				old++
			}
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return old, inline, own
}

// encoded is c's stored JSON with its priority set to prio.
func encoded(tb testing.TB, c view.Container, prio int) []byte {
	tb.Helper()
	c.Priority = prio
	b, err := json.Marshal(&c)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A store that a crash of the binary before batches left with per-record
// journal entries replays them, and then the batches a later flush
// appends, in order: the latest entry of a record wins, whichever its
// layout, and an old tombstone deletes. Close folds them all.
func TestJournalOldEntriesThenBatches(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
	var cs []view.Container
	for range 12 {
		cs = append(cs, e.submit(queue.Spec{Command: []string{"true"}}))
	}
	e.close()
	appendOldEntries(t, e.sopts.Path, []oldEntry{
		{cs[0].Seq, encoded(t, cs[0], 2)},
		{cs[1].Seq, encoded(t, cs[1], 4)},
		{cs[0].Seq, encoded(t, cs[0], 3)}, // later: wins over the first
		{cs[2].Seq, nil},                  // dropped
		{cs[3].Seq, encoded(t, cs[3], 2)},
	})
	e.q = e.open()
	if e.s.journalLen != 5 {
		t.Fatalf("journalLen = %d after replaying 5 old entries", e.s.journalLen)
	}
	prio := func(want map[int]int, gone int) {
		t.Helper()
		for i, c := range cs {
			got, ok := e.q.Get(c.ID)
			switch {
			case i == gone:
				if ok {
					t.Fatalf("container %d, dropped by an old tombstone, is back", i)
				}
			case !ok:
				t.Fatalf("container %d is missing", i)
			case got.Priority != want[i]:
				t.Fatalf("container %d: priority %d, want %d", i, got.Priority, want[i])
			}
		}
	}
	want := map[int]int{0: 3, 1: 4, 3: 2}
	for i := range cs {
		if _, ok := want[i]; !ok {
			want[i] = 1
		}
	}
	prio(want, 2)

	// A verb's flush (a small batch, a value of its own), then a larger
	// batch (in a bucket of its own), both newer than the old entries.
	if _, err := e.q.SetPriority(cs[1].ID, 5, "test", ""); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := 4; i < len(cs); i++ {
		many = append(many, cs[i].ID)
	}
	e.reprioritise(6, many...)
	e.reprioritise(7, cs[0].ID, cs[1].ID)
	want[0], want[1] = 7, 7
	for i := 4; i < len(cs); i++ {
		want[i] = 6
	}
	prio(want, 2)
	jn := e.s.journalLen
	if wantN := 5 + 1 + len(many) + 2; jn != wantN {
		t.Fatalf("journalLen = %d, want %d", jn, wantN)
	}
	snap := e.snapshot()
	e.crash()
	old, inline, own := journalKinds(t, e.sopts.Path)
	if old != 5 || inline < 1 || own < 1 {
		t.Fatalf("journal holds %d old entries, %d batches as values, %d in buckets: want 5, at least 1, at least 1", old, inline, own)
	}
	if n := journalLenInFile(t, e.sopts.Path); n != jn {
		t.Fatalf("the file's journal holds %d entries, want %d", n, jn)
	}
	e.q = e.open()
	if e.s.journalLen != jn {
		t.Fatalf("journalLen = %d after a crash, want %d", e.s.journalLen, jn)
	}
	prio(want, 2)
	wantEqual(t, "containers after replaying old entries and batches", e.snapshot(), snap)

	e.close()
	if n := journalLenInFile(t, e.sopts.Path); n != 0 {
		t.Fatalf("%d journal entries after Close, want 0", n)
	}
	if got := fileContainerKeys(t, e.sopts.Path); len(got) != len(cs)-1 {
		t.Fatalf("containers bucket holds %d records, want %d", len(got), len(cs)-1)
	}
	e.q = e.open()
	wantEqual(t, "containers after the fold", e.snapshot(), snap)
}

// A large store folds its oldest journal values beyond the window
// (foldOldest): old entries one by one and batches whole, so the journal
// keeps at most the window's entries, and a crash at any point replays to
// the state in memory.
func TestJournalFoldOldestBatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		old     bool // the journal starts with 2 old entries
		window  int
		batches []int // records per flush
		after   []int // journal entries after each flush
	}{
		// 2 old entries, then: 2+3 ≤ 6; 5+4 = 9 folds the old entries
		// (2) and the first batch (3): 4; 4+5 = 9 folds the second: 5;
		// 5+1 = 6 is the window.
		{"old entries, then batches", true, 6, []int{3, 4, 5, 1}, []int{5, 4, 5, 6}},
		// A batch larger than the window is folded in the flush that
		// wrote it.
		{"batch over the window", false, 2, []int{1, 7, 1}, []int{1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
			var cs []view.Container
			for range 8 {
				cs = append(cs, e.submit(queue.Spec{Command: []string{"true"}}))
			}
			e.close()
			if tc.old {
				appendOldEntries(t, e.sopts.Path, []oldEntry{{cs[0].Seq, encoded(t, cs[0], 2)}, {cs[1].Seq, encoded(t, cs[1], 2)}})
			}
			e.q = e.open()
			set := func() { e.s.opts.RebuildMax, e.s.opts.JournalKeep = 1, tc.window }
			set()
			for i, n := range tc.batches {
				var ids []string
				for j := range n {
					ids = append(ids, cs[(i+j)%len(cs)].ID)
				}
				e.reprioritise(10+i, ids...)
				if e.s.journalLen != tc.after[i] {
					t.Fatalf("flush %d: journalLen = %d, want %d", i, e.s.journalLen, tc.after[i])
				}
				snap := e.snapshot()
				e.crash()
				if n := journalLenInFile(t, e.sopts.Path); n != tc.after[i] {
					t.Fatalf("flush %d: the file's journal holds %d entries, want %d", i, n, tc.after[i])
				}
				e.q = e.open()
				set()
				wantEqual(t, fmt.Sprintf("flush %d: containers after a crash", i), e.snapshot(), snap)
			}
		})
	}
}

// A flush larger than the batch limit is cut into several batches, each
// within the limit unless one record alone exceeds it, and replays the same.
func TestJournalBatchesCut(t *testing.T) {
	for _, limit := range []int{1, 1000, 3000, 1 << 20} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
			var ids []string
			for range 10 {
				ids = append(ids, e.submit(queue.Spec{Command: []string{"true"}}).ID)
			}
			e.s.opts.BatchMax = limit
			e.reprioritise(4, ids...)
			if e.s.journalLen != len(ids) {
				t.Fatalf("journalLen = %d, want %d", e.s.journalLen, len(ids))
			}
			want := e.snapshot()
			e.crash()
			_, inline, own := journalKinds(t, e.sopts.Path)
			sizes := batchSizesInFile(t, e.sopts.Path)
			switch {
			case limit == 1 && len(sizes) != len(ids):
				t.Fatalf("%d batches, want one a record (%d)", len(sizes), len(ids))
			case limit == 1<<20 && len(sizes) != 1:
				t.Fatalf("%d batches, want 1", len(sizes))
			}
			for _, n := range sizes {
				if limit > 1 && n > limit {
					t.Fatalf("a batch of %d bytes, over the limit %d", n, limit)
				}
			}
			if inline+own != len(sizes) {
				t.Fatalf("%d journal values, %d batches", inline+own, len(sizes))
			}
			e.q = e.open()
			wantEqual(t, "containers after a crash", e.snapshot(), want)
		})
	}
}

// batchSizesInFile lists the sizes of the batches in the (closed) store
// file's journal.
func batchSizesInFile(tb testing.TB, path string) []int {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var sizes []int
	err = db.View(func(tx *bolt.Tx) error {
		jb := tx.Bucket(bucketJournal)
		return jb.ForEach(func(k, v []byte) error {
			if v == nil {
				v = jb.Bucket(k).Get(aloneKey)
			}
			if v[0] == store.BatchMarker {
				sizes = append(sizes, len(v))
			}
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sizes
}

// checkFile opens the (closed) store with bbolt's defaults and checks that
// every page is either in use or free, once.
func checkFile(tb testing.TB, path string) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("check %s: %v", path, err)
	}
}

// Rebuilds (their journal read with a size hint), clean closes and crashes
// leave a consistent file that opens with every record.
func TestFoldsLeaveConsistentFile(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprint("crash=", crash), func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
			var ids []string
			for range 3 {
				specs := make([]queue.Spec, 300)
				for i := range specs {
					specs[i] = queue.Spec{Command: []string{"true"}}
				}
				cs, err := e.q.SubmitBatch(specs, "test")
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cs {
					ids = append(ids, c.ID)
				}
				e.s.opts.FoldMin = 500 // a rebuild every other round
				for range 2 {
					e.pass(func(tx *queue.Tx) {
						for _, id := range ids {
							toggleLock(t, tx, tx.Get(id))
						}
					})
				}
				want := e.snapshot()
				if crash {
					e.crash()
				} else {
					e.close()
				}
				checkFile(t, e.sopts.Path)
				e.q = e.open()
				wantEqual(t, "containers after reopening", e.snapshot(), want)
			}
		})
	}
}
