// Tests of the change log's upkeep: compaction in place, the dropped mark,
// and a container changed twice in a row logged once.

package queue

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"dispatch-tui/engine/store"
	"dispatch-tui/engine/view"
)

// flaky is a store whose flushes fail while fail is set (a store outage,
// which puts dropped containers back: undropLocked).
type flaky struct {
	store.Store
	fail *atomic.Bool
}

func (f flaky) Flush(b *store.Batch) error {
	if f.fail.Load() {
		return errors.New("injected store outage")
	}
	return f.Store.Flush(b)
}

// checkLog holds the change log to what its readers rely on: generations
// rising, and after a compaction each live container once and no dropped
// one; every record's dropped mark says whether it left byID, and no
// compaction mark is left behind.
func checkLog(tb testing.TB, q *Queue, compacted bool, when string) {
	tb.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	seen := map[*Container]int{}
	var last uint64
	for i, ch := range q.changes {
		if ch.gen <= last {
			tb.Fatalf("%s: entry %d at generation %d after %d", when, i, ch.gen, last)
		}
		last = ch.gen
		seen[ch.c]++
		if dropped, gone := ch.c.hints&hintDropped != 0, q.byID.get(ch.c.ID) != ch.c; dropped != gone {
			tb.Fatalf("%s: %s marked dropped %v, out of the queue %v", when, ch.c.ID, dropped, gone)
		}
	}
	for c, n := range seen {
		if c.hints&hintLogged != 0 {
			tb.Fatalf("%s: %s still carries the compaction's mark", when, c.ID)
		}
		if compacted && (n != 1 || c.hints&hintDropped != 0) {
			tb.Fatalf("%s: after a compaction %s is in the log %d times, dropped %v", when, c.ID, n, c.hints&hintDropped != 0)
		}
	}
	for c := range q.byID.all() {
		id := c.ID
		if c.hints&(hintDropped|hintLogged) != 0 {
			tb.Fatalf("%s: %s in the queue carries marks %b", when, id, c.hints)
		}
		if compacted && seen[c] != 1 {
			tb.Fatalf("%s: after a compaction %s is in the log %d times, want once", when, id, seen[c])
		}
	}
}

// Readers that follow the changes, one often and one rarely, keep the
// queue's containers through several compactions of the log, with drops
// beyond keep_finished and drops put back by a failed flush in between;
// each compaction leaves every live container in the log once.
func TestChangesFollowAcrossCompactions(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.KeepFinished = 4; o.Store.NoSync = true })
	var fail atomic.Bool
	e.wrap = func(st store.Store) store.Store { return flaky{Store: st, fail: &fail} }
	q := e.reopen()

	var often, rarely follower
	specs := make([]Spec, 200)
	for i := range specs {
		specs[i] = spec("true")
	}
	cs, err := q.SubmitBatch(specs, "test")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	compactions, prevLen, undone := 0, 0, 0
	round := 0
	for ; compactions < 3; round++ {
		if round > 40 {
			t.Fatalf("%d rounds, %d compactions: the log is never compacted", round, compactions)
		}
		// Re-prioritise every container four times, one after another
		// (not twice in a row, so each change is an entry of its own).
		for k := range 4 {
			if _, err := q.Bulk(ids, BulkVerb{Verb: view.ContainerPriority, Priority: 1 + (4*round+k)%7, Actor: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		// Every other round two containers are killed and two submitted
		// in their place; the flush drops those beyond keep_finished, and
		// every fourth round it fails, putting them back (written by the
		// next flush).
		if round%2 == 1 {
			i := round * 2 % len(ids)
			outage := round%4 == 3
			fail.Store(outage)
			q.mu.Lock()
			tombs, total := len(q.tombs), q.byID.len()
			q.mu.Unlock()
			_, err := q.Bulk(ids[i:i+2], BulkVerb{Verb: view.ContainerKill, Actor: "test"})
			fail.Store(false)
			if outage != (err != nil) {
				t.Fatalf("round %d: a kill's flush in an outage %v: %v", round, outage, err)
			}
			if outage {
				q.mu.Lock()
				if len(q.tombs) > tombs && q.byID.len() == total {
					undone++
				}
				q.mu.Unlock()
				checkLog(t, q, false, fmt.Sprintf("round %d, after a failed flush", round))
				if err := q.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			ids[i], ids[i+1] = e.submit(spec("true")).ID, e.submit(spec("true")).ID
		}
		q.mu.Lock()
		n := len(q.changes)
		q.mu.Unlock()
		compacted := n < prevLen
		if compacted {
			compactions++
		}
		prevLen = n
		checkLog(t, q, false, fmt.Sprintf("round %d", round))
		often.follow(t, q, 7)
		often.check(t, e, fmt.Sprintf("round %d, the frequent reader", round))
		if round%5 == 0 {
			rarely.follow(t, q, 11)
			rarely.check(t, e, fmt.Sprintf("round %d, the rare reader", round))
		}
	}
	t.Logf("%d rounds, %d failed flushes undone", round, undone)
	if undone == 0 {
		t.Fatal("no failed flush put a dropped container back")
	}
	rarely.follow(t, q, 11)
	rarely.check(t, e, "the rare reader at the end")
	q.mu.Lock()
	q.compactChangesLocked()
	q.mu.Unlock()
	checkLog(t, q, true, "compacted at the end")
}

// A compaction runs inside a pass, under the queue's lock: it allocates
// nothing, and leaves the log room to grow again without allocating.
func TestChangesCompactionAllocatesNothing(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
	const n = 500
	q := e.q
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = spec("true")
	}
	if _, err := q.SubmitBatch(specs, "test"); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	live := make([]*Container, 0, n)
	for c := range q.byID.all() {
		live = append(live, c)
	}
	q.changes = append(make([]change, 0, 4*n), q.changes...)
	allocs := testing.AllocsPerRun(5, func() {
		for len(q.changes) < 3*n {
			for _, c := range live {
				q.gen++
				q.changes = append(q.changes, change{q.gen, c})
			}
		}
		q.compactChangesLocked()
	})
	if allocs != 0 {
		t.Errorf("a compaction of %d entries allocated %.0f times; want none", 3*n, allocs)
	}
	if len(q.changes) != n {
		t.Errorf("compacted to %d entries for %d containers", len(q.changes), n)
	}
}

// A start locks and runs a container in one pass: one entry in the log,
// which a reader since before the start reads once.
func TestChangesStartLoggedOnce(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(spec("true")).ID
	e.submit(spec("true"))
	var f follower
	f.follow(t, e.q, 10)
	e.q.mu.Lock()
	before := len(e.q.changes)
	e.q.mu.Unlock()
	e.pass(func(tx *Tx) {
		c := tx.Get(a)
		if err := tx.Lock(c, "t1"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Run(c, "i-1", "t1"); err != nil {
			t.Fatal(err)
		}
	})
	e.q.mu.Lock()
	added := len(e.q.changes) - before
	e.q.mu.Unlock()
	if added != 1 {
		t.Errorf("a start added %d entries to the change log; want 1", added)
	}
	ch, err := e.q.ChangesSince(f.gen, 10)
	if err != nil || len(ch.Items) != 1 || ch.Items[0].ID != a || ch.Items[0].State != Running {
		t.Fatalf("changes after a start: %+v, err %v; want %s Running", ch.Items, err, a)
	}
	f.follow(t, e.q, 10)
	f.check(t, e, "after the start")
}
