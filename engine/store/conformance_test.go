// The store conformance suite: one table of behaviours, run against every
// implementation of store.Store (the embedded bbolt file and PostgreSQL),
// through the queue as the engine drives it.

package store_test

import (
	"bytes"
	"dispatch-tui/engine/view"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/store/pgstore"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		crashChild() // never returns
	}
	os.Exit(pgtest.Run(m))
}

// backend opens stores of one implementation on the same data.
type backend struct {
	kind string // "bolt" or "postgres"
	at   string // the file's path or the database's URL
}

// storeOptions are what a behaviour may set on the stores it opens.
type storeOptions struct{ eventRetention int }

func (b backend) open(t testing.TB, o storeOptions) store.Store {
	t.Helper()
	s, err := openBackend(b.kind, b.at, o)
	if err != nil {
		t.Fatalf("open the %s store: %v", b.kind, err)
	}
	return s
}

func openBackend(kind, at string, o storeOptions) (store.Store, error) {
	if kind == "postgres" {
		return pgstore.Open(pgstore.Options{URL: at, EventRetention: o.eventRetention})
	}
	return boltstore.Open(boltstore.Options{Path: at, NoSync: true, EventRetention: o.eventRetention})
}

// backends returns a fresh, empty store of each implementation for t.
func backends(t *testing.T) []backend {
	return []backend{
		{kind: "bolt", at: filepath.Join(t.TempDir(), "queue.db")},
		{kind: "postgres", at: pgtest.NewDatabase(t)},
	}
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a queue on one backend's store, reopened at will.
type env struct {
	t   *testing.T
	b   backend
	so  storeOptions
	qo  queue.Options
	clk *clock.Fake
	st  store.Store
	q   *queue.Queue
}

func newEnv(t *testing.T, b backend, so storeOptions, qo queue.Options) *env {
	clk := clock.NewFake(t0)
	qo.Clock = clk
	e := &env{t: t, b: b, so: so, qo: qo, clk: clk}
	e.open()
	t.Cleanup(func() {
		if e.q != nil {
			e.q.Close()
		}
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	e.st = e.b.open(e.t, e.so)
	o := e.qo
	o.Store = e.st
	q, err := queue.Open(o)
	if err != nil {
		e.t.Fatalf("open the queue on %s: %v", e.b.kind, err)
	}
	e.q = q
}

func (e *env) reopen() {
	e.t.Helper()
	if err := e.q.Close(); err != nil {
		e.t.Fatalf("close: %v", err)
	}
	e.open()
}

func (e *env) submit(n int) []string {
	e.t.Helper()
	specs := make([]queue.Spec, n)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, Name: fmt.Sprint("c", i)}
	}
	cs, err := e.q.SubmitBatch(specs, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	ids := make([]string, n)
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

func (e *env) pass(fn func(tx *queue.Tx) error) {
	e.t.Helper()
	var ferr error
	if err := e.q.Pass(func(tx *queue.Tx) { ferr = fn(tx) }); err != nil {
		e.t.Fatalf("pass: %v", err)
	}
	if ferr != nil {
		e.t.Fatal(ferr)
	}
}

// finish runs ids to completion in one pass.
func (e *env) finish(ids ...string) {
	e.t.Helper()
	e.pass(func(tx *queue.Tx) error {
		for _, id := range ids {
			c := tx.Get(id)
			if err := tx.Lock(c, "small"); err != nil {
				return err
			}
			if err := tx.Run(c, "i-1", "small"); err != nil {
				return err
			}
			if err := tx.Finish(c, 0, tx.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	e.clk.Advance(time.Second)
}

func (e *env) snapshot() map[string]view.Container {
	var cs []*queue.Container
	e.q.Each(func(c *queue.Container) bool { cs = append(cs, c); return true })
	out := map[string]view.Container{}
	for _, c := range e.q.Views(cs) {
		out[c.ID] = c
	}
	return out
}

func (e *env) events() []queue.Event {
	e.t.Helper()
	evs, err := e.q.Events(0, 1<<30)
	if err != nil {
		e.t.Fatalf("events: %v", err)
	}
	return evs
}

func wantEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// behaviours is the table every store passes.
var behaviours = []struct {
	name string
	run  func(t *testing.T, b backend)
}{
	{"every transition survives a reopen", func(t *testing.T, b backend) {
		e := newEnv(t, b, storeOptions{}, queue.Options{})
		ids := e.submit(6)
		e.pass(func(tx *queue.Tx) error {
			for _, id := range ids[:4] {
				if err := tx.Lock(tx.Get(id), "small"); err != nil {
					return err
				}
			}
			for _, id := range ids[1:4] {
				if err := tx.Run(tx.Get(id), "i-1", "small"); err != nil {
					return err
				}
			}
			if err := tx.Finish(tx.Get(ids[2]), 3, tx.Now()); err != nil {
				return err
			}
			if err := tx.Requeue(tx.Get(ids[3]), "lost"); err != nil {
				return err
			}
			return tx.Cancel(tx.Get(ids[4]), queue.ReasonKilled, "test")
		})
		if _, err := e.q.Hold(ids[5], "operator:alice", "wait"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.SetPriority(ids[0], 7, "operator:alice", ""); err != nil {
			t.Fatal(err)
		}
		want, wantEv := e.snapshot(), e.events()
		e.reopen()
		wantEqual(t, "containers after reopen", e.snapshot(), want)
		wantEqual(t, "events after reopen", e.events(), wantEv)
		// And once more, after a flush that changed nothing.
		if err := e.q.Flush(); err != nil {
			t.Fatal(err)
		}
		e.reopen()
		wantEqual(t, "containers after a second reopen", e.snapshot(), want)
	}},
	{"events: retention and paging", func(t *testing.T, b backend) {
		e := newEnv(t, b, storeOptions{eventRetention: 10}, queue.Options{EventsInMemory: 3})
		for i := range 25 {
			if err := e.q.AddEvent("test", "verb", "x", "act", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		e.reopen()
		all := e.events()
		if len(all) != 10 || all[0].Reason != "15" || all[9].Reason != "24" {
			t.Fatalf("after reopen: %d events, %+v … %+v; want the newest 10", len(all), all[0], all[len(all)-1])
		}
		if first, last, ok := e.q.EventRange(); !ok || first != all[0].Seq || last != all[9].Seq {
			t.Fatalf("EventRange = %d, %d, %v; want %d, %d", first, last, ok, all[0].Seq, all[9].Seq)
		}
		// Pages from every since, from the store (memory holds 3).
		for since := uint64(0); since <= all[9].Seq; since++ {
			for _, limit := range []int{1, 4, 100} {
				got, err := e.q.Events(since, limit)
				if err != nil {
					t.Fatal(err)
				}
				var want []queue.Event
				for _, ev := range all {
					if ev.Seq > since && len(want) < limit {
						want = append(want, ev)
					}
				}
				wantEqual(t, fmt.Sprintf("Events(%d, %d)", since, limit), got, want)
			}
		}
		if err := e.q.AddEvent("test", "verb", "x", "act", "next"); err != nil {
			t.Fatal(err)
		}
		if evs := e.events(); evs[len(evs)-1].Seq != all[9].Seq+1 {
			t.Fatalf("the next event after a reopen is numbered %d, want %d", evs[len(evs)-1].Seq, all[9].Seq+1)
		}
	}},
	{"output: stored as given, up to the limit", func(t *testing.T, b backend) {
		e := newEnv(t, b, storeOptions{}, queue.Options{})
		ids := e.submit(3)
		e.finish(ids...)
		big := bytes.Repeat([]byte("0123456789abcde\n"), 4<<20/16) // max_output's default
		binary := []byte{0, 1, 2, 0xff, '\n', 0}
		if err := e.q.StoreLogsBatch(ids, [][]byte{big, binary, {}}); err != nil {
			t.Fatal(err)
		}
		e.reopen()
		for i, want := range [][]byte{big, binary, {}} {
			got, ok, err := e.q.StoredLogs(ids[i])
			if err != nil || !ok || !bytes.Equal(got, want) {
				t.Fatalf("output %d: %d bytes, found %v, err %v; want %d bytes", i, len(got), ok, err, len(want))
			}
		}
		if _, ok, err := e.q.StoredLogs("c-unknown"); ok || err != nil {
			t.Fatalf("output of an unknown container: found %v, err %v", ok, err)
		}
	}},
	{"keep_finished drops records and their output", func(t *testing.T, b backend) {
		e := newEnv(t, b, storeOptions{}, queue.Options{KeepFinished: 2})
		ids := e.submit(6)
		for _, id := range ids[:5] {
			e.finish(id)
			if err := e.q.StoreLogsBatch([]string{id}, [][]byte{[]byte("out " + id)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.q.Flush(); err != nil {
			t.Fatal(err)
		}
		check := func(when string) {
			t.Helper()
			if total, active := e.q.Len(); total != 3 || active != 1 {
				t.Fatalf("%s: Len = %d, %d; want 3, 1", when, total, active)
			}
			for i, id := range ids[:5] {
				_, kept := e.q.Get(id)
				_, hasOut, err := e.q.StoredLogs(id)
				if err != nil {
					t.Fatal(err)
				}
				if want := i >= 3; kept != want || hasOut != want {
					t.Fatalf("%s: container %d kept %v, output %v; want %v", when, i, kept, hasOut, want)
				}
			}
		}
		check("after the flush")
		e.reopen()
		check("after reopen")
	}},
	{"pause flag", func(t *testing.T, b backend) {
		e := newEnv(t, b, storeOptions{}, queue.Options{})
		for _, paused := range []bool{true, true, false, true, false} {
			if err := e.q.SetPaused(paused, "operator:alice", ""); err != nil {
				t.Fatal(err)
			}
			e.reopen()
			if e.q.Paused() != paused {
				t.Fatalf("after reopen Paused() = %v, want %v", !paused, paused)
			}
		}
	}},
	{"load after a crash mid-flush", testCrashMidFlush},
	{"cluster id: none, then the first kept, across flushes and reopens", func(t *testing.T, b backend) {
		// Kept before the queue loads (a start resolves it first).
		st := b.open(t, storeOptions{})
		if id, err := st.ClusterID(); id != "" || err != nil {
			t.Fatalf("a new store keeps cluster id %q (%v), want none", id, err)
		}
		if kept, err := st.KeepClusterID("dt-00000001"); kept != "dt-00000001" || err != nil {
			t.Fatalf("KeepClusterID(dt-00000001) = %q, %v; want it kept", kept, err)
		}
		st.Close()
		e := newEnv(t, b, storeOptions{}, queue.Options{})
		e.submit(3)
		if err := e.q.SetPaused(true, "operator:alice", ""); err != nil {
			t.Fatal(err)
		}
		if kept, err := e.st.KeepClusterID("dt-00000002"); kept != "dt-00000001" || err != nil {
			t.Fatalf("KeepClusterID(dt-00000002) = %q, %v; want the first, dt-00000001", kept, err)
		}
		e.reopen()
		if id, err := e.st.ClusterID(); id != "dt-00000001" || err != nil {
			t.Fatalf("after flushes and a reopen the store keeps %q (%v), want dt-00000001", id, err)
		}
	}},
	{"a write retried after its answer was lost is written once", func(t *testing.T, b backend) {
		// A commit the server made but whose answer the connection lost
		// (a restart at that moment) is retried by the queue as it was.
		key := func(body []byte) (uint64, string, error) {
			var seq uint64
			var id string
			_, err := fmt.Sscanf(string(body), "%d %s", &seq, &id)
			return seq, id, err
		}
		st := b.open(t, storeOptions{})
		if _, err := st.Load(10, store.RecordFunc(key), func(uint64, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		var batch store.Batch
		batch.Reset()
		batch.EndRecord(append(batch.BeginRecord(1), "1 c-1 queued"...))
		batch.EndEvent(1, append(batch.BeginEvent(), `{"n":1}`...))
		batch.EndEvent(2, append(batch.BeginEvent(), `{"n":2}`...))
		batch.Parts = []store.PartWrite{{Name: "ledger", Keys: []string{"a"}, Values: [][]byte{[]byte("1")}}}
		for try := range 2 {
			if err := st.Flush(&batch); err != nil {
				t.Fatalf("flush, try %d: %v", try+1, err)
			}
		}
		var sub store.Batch
		sub.Reset()
		sub.EndRecord(append(sub.BeginRecord(2), "2 c-2 queued"...))
		sub.EndEvent(3, append(sub.BeginEvent(), `{"n":3}`...))
		for try := range 2 {
			if err := st.Submit(&sub); err != nil {
				t.Fatalf("submit, try %d: %v", try+1, err)
			}
		}
		st.Close()
		st = b.open(t, storeOptions{})
		defer st.Close()
		got, err := store.ReadAll(st, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Records) != 2 || len(got.Events) != 3 || got.Events[2].Seq != 3 || string(got.Parts["ledger"]["a"]) != "1" {
			t.Fatalf("after writes retried: %d records, events %v, parts %v; want 2 records, events 1-3 once, ledger a=1", len(got.Records), got.Events, got.Parts)
		}
	}},
	{"read all: the output of each record's container, empty or binary, and no other", func(t *testing.T, b backend) {
		key := func(body []byte) (uint64, string, error) {
			var seq uint64
			var id string
			_, err := fmt.Sscanf(string(body), "%d %s", &seq, &id)
			return seq, id, err
		}
		st := b.open(t, storeOptions{})
		defer st.Close()
		if _, err := st.Load(10, store.RecordFunc(key), func(uint64, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		var sub store.Batch
		sub.Reset()
		for seq, id := range []string{"c-0", "c-1", "c-2"} {
			sub.EndRecord(append(sub.BeginRecord(uint64(seq)), fmt.Sprintf("%d %s complete", seq, id)...))
		}
		if err := st.Submit(&sub); err != nil {
			t.Fatal(err)
		}
		// c-2's is nil: a container that printed nothing (the queue hands
		// its output over as nil).
		if err := st.PutOutputs([]string{"c-0", "c-1", "c-2", "c-gone"}, [][]byte{{0, 1, 0xff}, {}, nil, []byte("no record")}); err != nil {
			t.Fatal(err)
		}
		got, err := store.ReadAll(st, key)
		if err != nil {
			t.Fatal(err)
		}
		out0, ok0 := got.Outputs["c-0"]
		out1, ok1 := got.Outputs["c-1"]
		out2, ok2 := got.Outputs["c-2"]
		if len(got.Outputs) != 3 || !ok0 || !bytes.Equal(out0, []byte{0, 1, 0xff}) || !ok1 || len(out1) != 0 || !ok2 || len(out2) != 0 {
			t.Fatalf("outputs read: %q; want c-0's three bytes, c-1's and c-2's empty ones, not c-gone's", got.Outputs)
		}
	}},
	{"parts: written by flushes, deleted by nil, each apart, read back", func(t *testing.T, b backend) {
		st := b.open(t, storeOptions{})
		flush := func(name string, kv ...string) {
			t.Helper()
			w := store.PartWrite{Name: name}
			for i := 0; i < len(kv); i += 2 {
				w.Keys = append(w.Keys, kv[i])
				var v []byte
				if kv[i+1] != "" {
					v = []byte(kv[i+1])
				}
				w.Values = append(w.Values, v)
			}
			var batch store.Batch
			batch.Reset()
			batch.Parts = append(batch.Parts, w)
			if err := st.Flush(&batch); err != nil {
				t.Fatalf("flush %s: %v", name, err)
			}
		}
		flush("ledger", "a", "1", "b", "2")
		flush("other", "a", "x")
		flush("ledger", "b", "", "c", "3", "a", "4")
		// Keys that sort differently in a language's collation than in
		// bytes: a part may rely on byte order ("i/…" before "s/…").
		flush("order", "s/x", "1", "i/x", "2", "S/y", "3", "_z", "4", "i-a", "5")
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st = b.open(t, storeOptions{})
		defer st.Close()
		var order []string
		if err := st.LoadPart("order", func(k, _ []byte) error { order = append(order, string(k)); return nil }); err != nil {
			t.Fatal(err)
		}
		if want := []string{"S/y", "_z", "i-a", "i/x", "s/x"}; !slices.Equal(order, want) {
			t.Errorf("part records read in the order %q, want byte order %q", order, want)
		}
		if names, err := st.PartNames(); err != nil || !slices.Equal(names, []string{"ledger", "order", "other"}) {
			t.Errorf("PartNames() = %q, %v; want ledger, order, other", names, err)
		}
		for name, want := range map[string]map[string]string{"ledger": {"a": "4", "c": "3"}, "other": {"a": "x"}, "none": {}} {
			got := map[string]string{}
			if err := st.LoadPart(name, func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
				t.Fatalf("load %s: %v", name, err)
			}
			if !maps.Equal(got, want) {
				t.Errorf("part %s read back %v, want %v", name, got, want)
			}
		}
	}},
}

func TestConformance(t *testing.T) {
	for _, bh := range behaviours {
		t.Run(bh.name, func(t *testing.T) {
			for _, b := range backends(t) {
				t.Run(b.kind, func(t *testing.T) { bh.run(t, b) })
			}
		})
	}
}
