package queue

import (
	"errors"
	"testing"

	"dispatch-tui/engine/view"
)

// TestBulkKill: one bulk kill cancels the queued, marks the running, fails
// on the finished and the unknown without touching them, records the
// same events single verbs would, and writes it all in one flush.
func TestBulkKill(t *testing.T) {
	e := newEnv(t, nil)
	q1, q2 := e.submit(spec("a")).ID, e.submit(spec("b")).ID
	run := e.submit(spec("c")).ID
	e.toState(run, Running)
	done := e.submit(spec("d")).ID
	e.toState(done, Complete)
	evBefore := len(e.events())
	batches := e.writes.Load()

	ids := []string{q1, "c-0000000000000000", run, done, q2}
	rs, err := e.q.Bulk(ids, BulkVerb{Verb: view.ContainerKill, Actor: "operator:alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(ids) {
		t.Fatalf("%d results for %d ids", len(rs), len(ids))
	}
	for i, want := range []State{Cancelled, "", Running, Complete, Cancelled} {
		r := rs[i]
		if r.ID != ids[i] || r.State != want {
			t.Errorf("result %d: %s %s, want %s %s", i, r.ID, r.State, ids[i], want)
		}
	}
	var fe *FinalError
	switch {
	case rs[0].Err != nil || rs[2].Err != nil || rs[4].Err != nil:
		t.Errorf("errors on containers the kill applies to: %v, %v, %v", rs[0].Err, rs[2].Err, rs[4].Err)
	case !errors.Is(rs[1].Err, ErrNotFound):
		t.Errorf("unknown id: %v, want ErrNotFound", rs[1].Err)
	case !errors.As(rs[3].Err, &fe):
		t.Errorf("finished container: %v, want a *FinalError", rs[3].Err)
	}
	if c := e.get(run); !c.KillRequested || c.KillReason != "killed by operator" {
		t.Errorf("running container after the kill: %+v", c)
	}
	if c := e.get(q1); c.ReasonCode != ReasonKilled {
		t.Errorf("queued container after the kill: %+v", c)
	}
	// Two events for each queued one (state, verb), one for the running.
	if n := len(e.events()) - evBefore; n != 5 {
		t.Errorf("%d new events, want 5", n)
	}
	after := e.writes.Load()
	if after != batches+1 {
		t.Errorf("the bulk kill wrote records in %d flushes, want 1 (one transaction)", after-batches)
	}
	e.reopen()
	if c := e.get(q2); c.State != Cancelled {
		t.Errorf("after reopen, %s is %s, want Cancelled", q2, c.State)
	}
}

// TestBulkOtherVerbs: hold, release and priority as bulk verbs, and an
// unknown verb or a negative priority refused before anything changes.
func TestBulkOtherVerbs(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.submit(spec("a")).ID, e.submit(spec("b")).ID
	ids := []string{a, b}
	for _, step := range []struct {
		v    BulkVerb
		held bool
		prio int
	}{
		{BulkVerb{Verb: view.ContainerHold}, true, 1},
		{BulkVerb{Verb: view.ContainerPriority, Priority: 7}, true, 7},
		{BulkVerb{Verb: view.ContainerRelease}, false, 7},
	} {
		rs, err := e.q.Bulk(ids, step.v)
		if err != nil {
			t.Fatalf("%s: %v", step.v.Verb, err)
		}
		for _, r := range rs {
			if c := e.get(r.ID); r.Err != nil || c.Held != step.held || c.Priority != step.prio || r.Held != step.held || r.Priority != step.prio {
				t.Errorf("%s: %s is held=%v priority %d (result %+v), want held=%v priority %d", step.v.Verb, r.ID, c.Held, c.Priority, r, step.held, step.prio)
			}
		}
	}
	n := len(e.events())
	if _, err := e.q.Bulk(ids, BulkVerb{Verb: view.ContainerPriority, Priority: -1}); err == nil {
		t.Error("a negative priority was taken")
	}
	if _, err := e.q.Bulk(ids, BulkVerb{Verb: view.ContainerVerb(99)}); err == nil {
		t.Error("an unknown verb was taken")
	}
	if got := len(e.events()); got != n {
		t.Errorf("refused bulk verbs recorded %d events", got-n)
	}
}
