package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"dispatch-tui/engine/view"
)

// follower is a reader of changes: its copy of the containers, by id, and
// the generation it is at.
type follower struct {
	gen   uint64
	rows  map[string]view.Container
	pages int
}

// follow reads every page of changes since f.gen with pages of limit,
// applying each (removed first, then items) as a console does.
func (f *follower) follow(tb testing.TB, q *Queue, limit int) {
	tb.Helper()
	if f.rows == nil {
		f.rows = map[string]view.Container{}
	}
	for {
		ch, err := q.ChangesSince(f.gen, limit)
		if err != nil {
			tb.Fatalf("changes since %d: %v", f.gen, err)
		}
		if len(ch.Items) > limit {
			tb.Fatalf("a page of %d items, limit %d", len(ch.Items), limit)
		}
		for _, id := range ch.Removed {
			delete(f.rows, id)
		}
		for _, c := range ch.Items {
			f.rows[c.ID] = c
		}
		f.gen = ch.Generation
		f.pages++
		if !ch.More {
			return
		}
	}
}

// check compares the follower's copy with the queue's, apart from the
// number of a position (readers number the line themselves).
func (f *follower) check(tb testing.TB, e *env, when string) {
	tb.Helper()
	want := e.snapshot()
	if len(f.rows) != len(want) {
		tb.Fatalf("%s: the follower has %d containers, the queue %d", when, len(f.rows), len(want))
	}
	for id, w := range want {
		g, ok := f.rows[id]
		if !ok {
			tb.Fatalf("%s: the follower lacks %s", when, id)
		}
		if w.ReasonCode == view.ReasonPosition && g.ReasonCode == view.ReasonPosition {
			g.Reason, w.Reason = "", ""
		}
		g.Pending, w.Pending = view.Pending{}, view.Pending{}
		wantEqual(tb, when+": "+id, g, w)
	}
}

// A reader that applies the changes, page by page, keeps the same
// containers as the queue through submits, state changes, verbs, drops
// beyond keep_finished and a failed flush's undo; a reopen sends it back
// to a full read.
func TestChangesFollowTheQueue(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.KeepFinished = 3 })
	var f follower
	f.follow(t, e.q, 2)
	f.check(t, e, "empty")

	ids := make([]string, 10)
	for i := range ids {
		ids[i] = e.submit(spec("true")).ID
	}
	f.follow(t, e.q, 3)
	f.check(t, e, "after submits")
	if f.pages < 4 {
		t.Fatalf("10 submits read in %d pages of 3", f.pages)
	}

	before := f.gen
	for i, s := range []State{Locked, Running, Complete, Complete, Cancelled, Complete, Complete} {
		e.toState(ids[i], s)
	}
	if _, err := e.q.Hold(ids[8], "test", ""); err != nil {
		t.Fatal(err)
	}
	if err := e.q.Flush(); err != nil { // drops 2 of the 5 final ones
		t.Fatal(err)
	}
	ch, err := e.q.ChangesSince(before, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Removed) != 2 {
		t.Fatalf("removed %v after dropping 2 finished containers", ch.Removed)
	}
	if total, _ := e.q.Len(); ch.Total != total {
		t.Fatalf("total %d, the queue has %d", ch.Total, total)
	}
	f.follow(t, e.q, 2)
	f.check(t, e, "after changes and drops")

	// Nothing changed: an empty page at the same generation.
	ch, err = e.q.ChangesSince(f.gen, 10)
	if err != nil || len(ch.Items) != 0 || len(ch.Removed) != 0 || ch.Generation != f.gen {
		t.Fatalf("quiet queue: %d items, removed %v, generation %d (was %d), err %v", len(ch.Items), ch.Removed, ch.Generation, f.gen, err)
	}

	gen := f.gen
	e.reopen()
	if _, err := e.q.ChangesSince(gen, 10); !errors.Is(err, ErrReload) {
		t.Fatalf("changes since a generation of the previous run: %v, want ErrReload", err)
	}
	var g follower
	g.follow(t, e.q, 4)
	g.check(t, e, "a full read after reopening")
}

// A pass that only renumbers the line changes no container for readers of
// changes; a new reason does.
func TestChangesLeaveOutPositionNumbers(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.submit(spec("true")).ID, e.submit(spec("true")).ID
	e.pass(func(tx *Tx) {
		tx.SetPending(tx.Get(a), Pending{Code: ReasonPosition, N: 1})
		tx.SetPending(tx.Get(b), Pending{Code: ReasonPosition, N: 2})
	})
	var f follower
	f.follow(t, e.q, 10)
	gen := e.q.Generation()
	e.pass(func(tx *Tx) {
		tx.SetPending(tx.Get(b), Pending{Code: ReasonPosition, N: 1})
	})
	if e.q.Generation() == gen {
		t.Fatal("a new position left the generation as it was")
	}
	ch, err := e.q.ChangesSince(f.gen, 10)
	if err != nil || len(ch.Items) != 0 {
		t.Fatalf("after a renumbering: %d items, err %v; want none", len(ch.Items), err)
	}
	e.pass(func(tx *Tx) { tx.SetPending(tx.Get(a), Pending{Code: ReasonHeld}) })
	ch, err = e.q.ChangesSince(f.gen, 10)
	if err != nil || len(ch.Items) != 1 || ch.Items[0].ID != a || ch.Items[0].ReasonCode != ReasonHeld {
		t.Fatalf("after a new reason: %+v, err %v; want %s held", ch.Items, err, a)
	}
}

// A reader further behind than the tombstones kept reads everything again.
func TestChangesReloadPastTombstones(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.KeepFinished = 1; o.Tombstones = 4 })
	var f follower
	f.follow(t, e.q, 100)
	for range 8 {
		id := e.submit(spec("true")).ID
		e.toState(id, Cancelled)
		if err := e.q.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.q.ChangesSince(f.gen, 100); !errors.Is(err, ErrReload) || view.KindOf(err) != view.KindGone {
		t.Fatalf("7 drops with 4 tombstones kept: %v, want ErrReload", err)
	}
	var g follower
	g.follow(t, e.q, 100)
	g.check(t, e, "after reloading")
	if _, err := e.q.ChangesSince(g.gen+1, 100); !errors.Is(err, ErrReload) {
		t.Fatalf("changes since a generation ahead of the queue: %v, want ErrReload", err)
	}
}

// WaitChanges returns as soon as a container changes, and not for a pass
// that only renumbers the line.
func TestWaitChanges(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(spec("true")).ID
	e.pass(func(tx *Tx) { tx.SetPending(tx.Get(a), Pending{Code: ReasonPosition, N: 1}) })
	gen := e.q.Generation()
	if !e.q.WaitChanges(context.Background(), gen-1) {
		t.Fatal("WaitChanges since an older generation did not return at once")
	}
	e.pass(func(tx *Tx) { tx.SetPending(tx.Get(a), Pending{Code: ReasonPosition, N: 2}) })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if e.q.WaitChanges(ctx, gen) {
		t.Fatal("WaitChanges returned for a renumbering")
	}
	cancel()

	done := make(chan bool, 1)
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := e.q.Generation()
	go func() { done <- e.q.WaitChanges(ctx, now) }()
	e.submit(spec("true"))
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("WaitChanges reported no change after a submit")
		}
	case <-time.After(time.Minute):
		t.Fatal("WaitChanges did not return within a minute of a submit")
	}
}

// A first read (since 0) returns each container once, even when the log
// holds it twice: a restart logs every container it loads, and the first
// pass logs again each one whose reason it sets.
func TestFirstReadReturnsEachContainerOnce(t *testing.T) {
	e := newEnv(t, nil)
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = e.submit(spec("true")).ID
	}
	e.reopen()
	e.pass(func(tx *Tx) {
		for _, id := range ids {
			tx.SetPending(tx.Get(id), Pending{Code: ReasonHeld})
		}
	})
	seen := map[string]int{}
	items := 0
	for since := uint64(0); ; {
		ch, err := e.q.ChangesSince(since, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Items {
			seen[c.ID]++
		}
		items += len(ch.Items)
		since = ch.Generation
		if !ch.More {
			break
		}
	}
	if items != len(ids) || len(seen) != len(ids) {
		t.Fatalf("a first read of %d containers returned %d items (%d distinct): %v", len(ids), items, len(seen), seen)
	}
}

// A container changed twice since a reader's generation, with another
// change between, is on the page once; a page cut at its limit leaves
// nothing marked, so the next read from the same generation is the same.
func TestChangesPageHoldsEachContainerOnce(t *testing.T) {
	e := newEnv(t, nil)
	a, b, c := e.submit(spec("true")).ID, e.submit(spec("true")).ID, e.submit(spec("true")).ID
	since := e.q.Generation()
	for _, id := range []string{a, b, a, c, a} {
		if _, err := e.q.Hold(id, "test", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Release(id, "test", ""); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(ch Changes) []string {
		var out []string
		for _, v := range ch.Items {
			out = append(out, v.ID)
		}
		return out
	}
	for range 2 {
		ch, err := e.q.ChangesSince(since, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(ch); len(got) != 3 {
			t.Fatalf("changes since %d: %v, want %s, %s and %s once each", since, got, a, b, c)
		}
		cut, err := e.q.ChangesSince(since, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(cut); len(got) != 2 || !cut.More {
			t.Fatalf("a page of 2: %v (more %v), want 2 and more", got, cut.More)
		}
	}
}

// A page of more views than a read makes under one hold of the lock
// (viewChunk) holds every one, each the container as it is.
func TestChangesPageAcrossViewChunks(t *testing.T) {
	e := newEnv(t, nil)
	specs := make([]Spec, 2*viewChunk+7)
	for i := range specs {
		specs[i] = spec("true")
	}
	if _, err := e.q.SubmitBatch(specs, "test"); err != nil {
		t.Fatal(err)
	}
	var f follower
	f.follow(t, e.q, len(specs))
	f.check(t, e, "after a page of every container")
	if f.pages != 1 {
		t.Fatalf("%d containers read in %d pages, want 1", len(specs), f.pages)
	}
}
