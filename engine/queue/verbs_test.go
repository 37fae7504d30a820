package queue

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/view"
)

type verbFunc func(q *Queue, id string) (view.Container, error)

var verbs = []struct {
	name   string
	action string
	do     verbFunc
}{
	{"Hold", "hold", func(q *Queue, id string) (view.Container, error) { return q.Hold(id, "operator:alice", "why") }},
	{"Release", "release", func(q *Queue, id string) (view.Container, error) { return q.Release(id, "operator:alice", "why") }},
	{"SetPriority", "priority 4", func(q *Queue, id string) (view.Container, error) {
		return q.SetPriority(id, 4, "operator:alice", "why")
	}},
	{"Kill", "kill", func(q *Queue, id string) (view.Container, error) { return q.Kill(id, "operator:alice", "why") }},
}

func TestVerbEffects(t *testing.T) {
	tests := []struct {
		name  string
		state State
		verb  string
		check func(t *testing.T, before, after view.Container)
		// stateEvent: the verb also records a state change to Cancelled.
		stateEvent bool
	}{
		{name: "hold queued", state: Queued, verb: "Hold", check: func(t *testing.T, b, a view.Container) {
			if !a.Held || a.State != Queued {
				t.Errorf("%+v", a)
			}
		}},
		{name: "hold locked", state: Locked, verb: "Hold", check: func(t *testing.T, b, a view.Container) {
			if !a.Held || a.State != Locked {
				t.Errorf("%+v", a)
			}
		}},
		{name: "hold running leaves it running", state: Running, verb: "Hold", check: func(t *testing.T, b, a view.Container) {
			if a.State != Running || a.InstanceID != b.InstanceID || a.KillRequested {
				t.Errorf("%+v", a)
			}
		}},
		{name: "release queued", state: Queued, verb: "Release", check: func(t *testing.T, b, a view.Container) {
			if a.Held || a.State != Queued {
				t.Errorf("%+v", a)
			}
		}},
		{name: "priority queued", state: Queued, verb: "SetPriority", check: func(t *testing.T, b, a view.Container) {
			if a.Priority != 4 {
				t.Errorf("%+v", a)
			}
		}},
		{name: "priority running", state: Running, verb: "SetPriority", check: func(t *testing.T, b, a view.Container) {
			if a.Priority != 4 || a.State != Running {
				t.Errorf("%+v", a)
			}
		}},
		{name: "kill queued", state: Queued, verb: "Kill", stateEvent: true, check: func(t *testing.T, b, a view.Container) {
			if a.State != Cancelled || a.ReasonCode != ReasonKilled || a.Reason != "why" || a.FinishedAt.IsZero() {
				t.Errorf("%+v", a)
			}
		}},
		{name: "kill locked", state: Locked, verb: "Kill", stateEvent: true, check: func(t *testing.T, b, a view.Container) {
			if a.State != Cancelled || a.ReasonCode != ReasonKilled || a.Reason != "why" {
				t.Errorf("%+v", a)
			}
		}},
		{name: "kill running", state: Running, verb: "Kill", check: func(t *testing.T, b, a view.Container) {
			if a.State != Running || !a.KillRequested || a.KillReason != "why" || !a.FinishedAt.IsZero() {
				t.Errorf("%+v", a)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			id := e.submit(spec("x")).ID
			e.toState(id, tt.state)
			if tt.verb == "Release" {
				mustVerb(t)(e.q.Hold(id, "operator:bob", ""))
			}
			e.clk.Advance(time.Minute)
			before := e.get(id)
			evBefore := e.events()
			_, activeBefore := e.q.Len()

			var v verbFunc
			var action string
			for _, vb := range verbs {
				if vb.name == tt.verb {
					v, action = vb.do, vb.action
				}
			}
			got, err := v(e.q, id)
			if err != nil {
				t.Fatalf("%s: %v", tt.verb, err)
			}
			after := e.get(id)
			wantEqual(t, "returned record", got, after)
			tt.check(t, before, after)

			now := e.clk.Now()
			var want []Event
			next := evBefore[len(evBefore)-1].Seq + 1
			if tt.stateEvent {
				want = append(want, Event{Seq: next, Time: now, Actor: "operator:alice", Kind: "state", Target: id, Action: string(Cancelled), Reason: "why"})
				next++
			}
			want = append(want, Event{Seq: next, Time: now, Actor: "operator:alice", Kind: "verb", Target: id, Action: action, Reason: "why"})
			wantEqual(t, "new events", e.events()[len(evBefore):], want)

			_, active := e.q.Len()
			if after.State.Final() {
				if active != activeBefore-1 {
					t.Errorf("Len active = %d, want %d", active, activeBefore-1)
				}
				if slices.Contains(e.activeIDs(), id) {
					t.Error("a killed container is still in Active()")
				}
				if !after.FinishedAt.Equal(now) {
					t.Errorf("FinishedAt = %v, want %v", after.FinishedAt, now)
				}
			}

			e.reopen()
			wantEqual(t, "record after reopen", e.get(id), after)
			wantEqual(t, "events after reopen", e.events()[len(evBefore):], want)
		})
	}
}

func TestKillDefaultReason(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(spec("x")).ID
	c, err := e.q.Kill(id, "operator:alice", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.State != Cancelled || c.Reason != "killed by operator" || c.ReasonCode != ReasonKilled {
		t.Fatalf("%+v", c)
	}
	if ev := e.lastEvent(); ev.Action != "kill" || ev.Reason != "killed by operator" {
		t.Fatalf("event %+v", ev)
	}
	// Killing a running container twice keeps one kill request.
	id = e.submit(spec("y")).ID
	e.toState(id, Running)
	mustVerb(t)(e.q.Kill(id, "operator:alice", ""))
	c, err = e.q.Kill(id, "operator:bob", "again")
	if err != nil {
		t.Fatal(err)
	}
	if c.State != Running || !c.KillRequested || c.KillReason != "again" {
		t.Fatalf("%+v", c)
	}
}

// Holding and releasing are idempotent but each call is recorded.
func TestHoldReleaseIdempotent(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(spec("x")).ID
	n := len(e.events())
	for _, step := range []struct {
		do   func() (view.Container, error)
		held bool
	}{
		{func() (view.Container, error) { return e.q.Hold(id, "a", "") }, true},
		{func() (view.Container, error) { return e.q.Hold(id, "a", "") }, true},
		{func() (view.Container, error) { return e.q.Release(id, "a", "") }, false},
		{func() (view.Container, error) { return e.q.Release(id, "a", "") }, false},
	} {
		c, err := step.do()
		if err != nil {
			t.Fatal(err)
		}
		if c.Held != step.held {
			t.Fatalf("Held = %v, want %v", c.Held, step.held)
		}
	}
	if got := len(e.events()) - n; got != 4 {
		t.Fatalf("%d events, want 4", got)
	}
}

func TestVerbErrors(t *testing.T) {
	for _, final := range []State{Complete, Cancelled} {
		for _, vb := range verbs {
			t.Run(string(final)+"/"+vb.name, func(t *testing.T) {
				e := newEnv(t, nil)
				id := e.submit(spec("x")).ID
				e.toState(id, final)
				before := e.snapshot()
				evBefore := e.events()
				notes, stop := e.q.Subscribe()
				defer stop()

				got, err := vb.do(e.q, id)
				if err == nil {
					t.Fatalf("%s on a %s container succeeded", vb.name, final)
				}
				if errors.Is(err, ErrNotFound) {
					t.Errorf("error %v is ErrNotFound", err)
				}
				// Typed (the API's 409), and saying what is wrong: the
				// container has ended, not "only queued ones" (a running
				// one can be held).
				var fe *FinalError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), "is "+string(final)+": a finished container cannot be") {
					t.Errorf("error %q (%T), want a *FinalError saying the container is %s and finished", err, err, final)
				}
				wantEqual(t, "returned", got, view.Container{})
				wantEqual(t, "records", e.snapshot(), before)
				wantEqual(t, "events", e.events(), evBefore)
				select {
				case <-notes:
					t.Error("a refused verb notified subscribers")
				default:
				}
				e.reopen()
				wantEqual(t, "records on disk", e.snapshot(), before)
				wantEqual(t, "events on disk", e.events(), evBefore)
			})
		}
	}
	for _, vb := range verbs {
		t.Run("unknown/"+vb.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.submit(spec("x"))
			evBefore := e.events()
			_, err := vb.do(e.q, "c-does-not-exist")
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("error %v, want ErrNotFound", err)
			}
			wantEqual(t, "events", e.events(), evBefore)
		})
	}
	t.Run("negative priority", func(t *testing.T) {
		e := newEnv(t, nil)
		id := e.submit(spec("x")).ID
		before := e.get(id)
		evBefore := e.events()
		_, err := e.q.SetPriority(id, -1, "op", "")
		wantFieldError(t, err, "priority")
		wantEqual(t, "record", e.get(id), before)
		wantEqual(t, "events", e.events(), evBefore)
		// The priority check comes first, even for unknown ids.
		_, err = e.q.SetPriority("c-nope", -1, "op", "")
		wantFieldError(t, err, "priority")
	})
}
