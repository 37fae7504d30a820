package backend

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// testEnv is an Engine on the fake driver with a fake clock.
type testEnv struct {
	*enginetest.Env
	t   *testing.T
	clk *clock.Fake
	eng *engine.Engine
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	env := enginetest.New(t, enginetest.Config(t), fake.Options{}, engine.Options{})
	return &testEnv{Env: env, t: t, clk: env.Clock, eng: env.Engine}
}

func (e *testEnv) close()     { e.Close() }
func (e *testEnv) step(n int) { e.Step(n) }
func (e *testEnv) until(what string, max int, cond func() bool) {
	e.t.Helper()
	e.Until(what, max, cond)
}

// submit adds a container running d of clock time (d < 0: until killed).
func (e *testEnv) submit(name string, d time.Duration, vcpus int) string {
	e.t.Helper()
	return e.Submit(view.Spec{Name: name, Command: enginetest.Cmd(d), RuntimeConstraints: queue.Constraints{VCPUs: vcpus}})
}

func (e *testEnv) container(id string) view.Container { return e.Container(id) }
func (e *testEnv) instance(id string) view.Instance   { return e.Instance(id) }

// lastEvent returns the newest event.
func (e *testEnv) lastEvent() queue.Event {
	e.t.Helper()
	evs, err := e.eng.Events(0, 100000)
	if err != nil || len(evs) == 0 {
		e.t.Fatalf("events: %v (%d)", err, len(evs))
	}
	return evs[len(evs)-1]
}

func findContainer(cs []view.Container, id string) (view.Container, bool) {
	i := slices.IndexFunc(cs, func(c view.Container) bool { return c.ID == id })
	if i < 0 {
		return view.Container{}, false
	}
	return cs[i], true
}

// checkSnapshot compares a snapshot with the engine it came from.
func checkSnapshot(t *testing.T, e *testEnv, s *Snapshot, ids ...string) {
	t.Helper()
	if s.TakenAt.IsZero() {
		t.Error("TakenAt is zero")
	}
	if s.Rows.Len() != len(ids) {
		t.Errorf("%d containers, want %d", s.Rows.Len(), len(ids))
	}
	for _, id := range ids {
		c, ok := s.Rows.Get(id)
		if !ok {
			t.Errorf("container %s missing from the snapshot", id)
			continue
		}
		if want := e.container(id); c.State != want.State || c.Name != want.Name {
			t.Errorf("container %s: %s %q, engine says %s %q", id, c.State, c.Name, want.State, want.Name)
		}
	}
	if got, want := len(s.Instances), len(e.eng.Instances()); got != want || got == 0 {
		t.Errorf("%d instances, engine has %d (want > 0)", got, want)
	}
	if len(s.Types) != 2 || s.Types[0].Name != "small" || s.Types[1].Name != "large" {
		t.Errorf("types = %+v", s.Types)
	}
	total := 0
	for _, n := range s.Summary.Containers {
		total += n
	}
	if total != len(ids) || s.Summary.Driver != "fake" {
		t.Errorf("summary %+v: %d containers, want %d", s.Summary, total, len(ids))
	}
	if len(s.Events) == 0 || len(s.Events) > EventsKept {
		t.Fatalf("%d events", len(s.Events))
	}
	for i := 1; i < len(s.Events); i++ {
		if s.Events[i].Seq <= s.Events[i-1].Seq {
			t.Fatalf("events out of order at %d: %d after %d", i, s.Events[i].Seq, s.Events[i-1].Seq)
		}
	}
	if got, want := s.Events[len(s.Events)-1].Seq, e.lastEvent().Seq; got != want {
		t.Errorf("newest event in snapshot %d, engine's newest %d", got, want)
	}
}

func TestInProcessSnapshot(t *testing.T) {
	e := newTestEnv(t)
	b := NewInProcess(e.eng, "local (in-process)")
	if b.Describe() != "local (in-process)" {
		t.Errorf("Describe() = %q", b.Describe())
	}
	short := e.submit("short", 3*time.Second, 1)
	long := e.submit("long", -1, 1)
	big := e.submit("big", -1, 4)
	e.until("all running", 60, func() bool {
		return e.container(long).State == queue.Running && e.container(big).State == queue.Running
	})
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, e, s, short, long, big)
	if c, _ := findContainer(s.Containers, big); c.InstanceType != "large" {
		t.Errorf("big runs on %q, want large", c.InstanceType)
	}

	// The snapshot is a copy: later changes do not show in it.
	e.step(10)
	e.submit("later", -1, 1)
	if len(s.Containers) != 3 {
		t.Errorf("snapshot changed: %d containers", len(s.Containers))
	}
	s2, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Containers) != 4 || s2.Events[len(s2.Events)-1].Seq <= s.Events[len(s.Events)-1].Seq {
		t.Errorf("second snapshot: %d containers, newest event %d (first %d)",
			len(s2.Containers), s2.Events[len(s2.Events)-1].Seq, s.Events[len(s.Events)-1].Seq)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Snapshot(ctx); err == nil {
		t.Error("Snapshot with a cancelled context: no error")
	}
}

func TestInProcessManyEvents(t *testing.T) {
	e := newTestEnv(t)
	b := NewInProcess(e.eng, "x")
	id := e.submit("c", -1, 1)
	for i := range 700 {
		verb := e.eng.HoldContainer
		if i%2 == 1 {
			verb = e.eng.ReleaseContainer
		}
		if _, err := verb(id, "test", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != EventsKept {
		t.Fatalf("%d events, want %d", len(s.Events), EventsKept)
	}
	last := e.lastEvent()
	if got := s.Events[len(s.Events)-1]; got.Seq != last.Seq || got.Reason != "699" {
		t.Errorf("newest event %+v, want %+v", got, last)
	}
	// Incremental: a few more.
	for i := range 3 {
		if _, err := e.eng.SetPriority(id, i, "test", "p"); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Events) != EventsKept || s2.Events[len(s2.Events)-1].Seq != last.Seq+3 ||
		s2.Events[0].Seq != s.Events[0].Seq+3 {
		t.Errorf("after 3 more: %d events, %d..%d", len(s2.Events), s2.Events[0].Seq, s2.Events[len(s2.Events)-1].Seq)
	}
}

// fakeLog is an event log of n events (seq 1..n) that counts reads and
// the events they return, read newest first as EventsNewest does.
type fakeLog struct {
	n       atomic.Uint64
	reads   atomic.Int64
	fetched atomic.Int64
}

func (l *fakeLog) fetch(_ context.Context, since uint64, limit int) ([]queue.Event, error) {
	l.reads.Add(1)
	var out []queue.Event
	for s := l.n.Load(); s > since && len(out) < limit; s-- {
		out = append(out, queue.Event{Seq: s})
	}
	l.fetched.Add(int64(len(out)))
	return out, nil
}

func TestEventTail(t *testing.T) {
	for _, n := range []uint64{0, 1, 499, 500, 501, 999, 1000, 1001, 5000, 123457} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			l := &fakeLog{}
			l.n.Store(n)
			tail := newEventTail(l.fetch)
			// One read a call, of at most the events kept: however far
			// behind, the tail reads no event it does not keep.
			check := func(n uint64) {
				t.Helper()
				l.reads.Store(0)
				l.fetched.Store(0)
				evs, err := tail.latest(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				want := min(n, EventsKept)
				if uint64(len(evs)) != want {
					t.Fatalf("n=%d: %d events, want %d", n, len(evs), want)
				}
				for i, ev := range evs {
					if ev.Seq != n-want+1+uint64(i) {
						t.Fatalf("n=%d: event %d has seq %d, want %d", n, i, ev.Seq, n-want+1+uint64(i))
					}
				}
				if r, f := l.reads.Load(), l.fetched.Load(); r != 1 || f > EventsKept {
					t.Errorf("n=%d: %d reads of %d events, want one of at most %d", n, r, f, EventsKept)
				}
			}
			check(n)
			check(n) // nothing new
			l.n.Add(7)
			check(n + 7)
			l.n.Add(3000)
			check(n + 3007)
		})
	}
}

func TestInProcessVerbs(t *testing.T) {
	e := newTestEnv(t)
	b := NewInProcess(e.eng, "x")
	ctx := context.Background()
	actor := Actor()
	if len(actor) <= len("tui:") || actor[:4] != "tui:" {
		t.Fatalf("Actor() = %q", actor)
	}
	queued := e.submit("queued", -1, 1)
	if err := b.SetPaused(ctx, true, "maintenance"); err != nil {
		t.Fatal(err)
	}
	if !e.eng.Summary().Paused {
		t.Error("not paused")
	}
	if ev := e.lastEvent(); ev.Actor != actor {
		t.Errorf("pause recorded as %q, want %q", ev.Actor, actor)
	}
	if err := b.ContainerVerb(ctx, queued, view.ContainerHold, "wait"); err != nil {
		t.Fatal(err)
	}
	if !e.container(queued).Held {
		t.Error("hold: not held")
	}
	if ev := e.lastEvent(); ev.Actor != actor || ev.Target != queued || ev.Action != "hold" || ev.Reason != "wait" {
		t.Errorf("hold recorded as %+v", ev)
	}
	if err := b.ContainerVerb(ctx, queued, view.ContainerRelease, ""); err != nil {
		t.Fatal(err)
	}
	if e.container(queued).Held {
		t.Error("release: still held")
	}
	if err := b.SetPriority(ctx, queued, 7); err != nil {
		t.Fatal(err)
	}
	if p := e.container(queued).Priority; p != 7 {
		t.Errorf("priority %d, want 7", p)
	}
	if err := b.SetPriority(ctx, queued, -1); err == nil {
		t.Error("negative priority accepted")
	}
	if err := b.SetPaused(ctx, false, ""); err != nil {
		t.Fatal(err)
	}
	if e.eng.Summary().Paused {
		t.Error("still paused")
	}

	var inst string
	e.until("running", 60, func() bool {
		c := e.container(queued)
		inst = c.InstanceID
		return c.State == queue.Running
	})
	if out, err := b.Logs(ctx, queued, 1); err != nil || !bytes.Contains(out, []byte("fake: ")) {
		t.Errorf("Logs = %q, %v", out, err)
	}
	for _, v := range []struct {
		verb view.InstanceVerb
		want worker.IdleBehavior
	}{{view.InstanceHold, worker.IdleHold}, {view.InstanceDrain, worker.IdleDrain}, {view.InstanceRun, worker.IdleRun}} {
		if err := b.InstanceVerb(ctx, inst, v.verb, "r"); err != nil {
			t.Fatalf("%s: %v", v.verb, err)
		}
		if got := e.instance(inst).IdleBehavior; got != v.want {
			t.Errorf("%s: idle behaviour %s, want %s", v.verb, got, v.want)
		}
		if ev := e.lastEvent(); ev.Actor != actor || ev.Target != inst {
			t.Errorf("%s recorded as %+v", v.verb, ev)
		}
	}
	if err := b.ContainerVerb(ctx, queued, view.ContainerKill, "enough"); err != nil {
		t.Fatal(err)
	}
	e.until("killed", 60, func() bool { return e.container(queued).State == queue.Cancelled })

	other := e.submit("other", -1, 1)
	e.until("other running", 60, func() bool { return e.container(other).State == queue.Running })
	inst = e.container(other).InstanceID
	if err := b.InstanceVerb(ctx, inst, view.InstanceKill, "bad"); err != nil {
		t.Fatal(err)
	}
	if st := e.container(other).State; st == queue.Running {
		t.Errorf("container on a killed instance still %s", st)
	}

	for _, err := range []error{
		b.InstanceVerb(ctx, inst, view.InstanceVerb(99), ""),
		b.ContainerVerb(ctx, other, view.ContainerVerb(99), ""),
		b.InstanceVerb(ctx, "no-such-instance", view.InstanceHold, ""),
		b.ContainerVerb(ctx, "no-such-container", view.ContainerHold, ""),
		b.SetPriority(ctx, "no-such-container", 1),
	} {
		if err == nil {
			t.Error("a bad verb succeeded")
		}
	}
	if _, err := b.Logs(ctx, "no-such-container", 0); err == nil {
		t.Error("logs of an unknown container: no error")
	}
}

func TestInProcessChanges(t *testing.T) {
	e := newTestEnv(t)
	b := NewInProcess(e.eng, "x")
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Changes(ctx)
	for range 5 {
		e.submit("c", -1, 1) // several notifications, coalesced
	}
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatal("closed early")
		}
	case <-time.After(wait.Budget(5 * time.Second)):
		t.Fatal("no change after submit")
	}
	e.step(1)
	select {
	case <-ch:
	case <-time.After(wait.Budget(5 * time.Second)):
		t.Fatal("no change after a step")
	}
	cancel()
	deadline := time.After(wait.Budget(5 * time.Second))
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("not closed after cancel")
		}
	}
}

func TestInProcessChangesClosedWithEngine(t *testing.T) {
	e := newTestEnv(t)
	b := NewInProcess(e.eng, "x")
	ch := b.Changes(context.Background())
	e.close()
	select {
	case <-ch:
		// a last notification or the close; the next read must be the close
		select {
		case _, ok := <-ch:
			if ok {
				t.Error("still open after engine close")
			}
		case <-time.After(wait.Budget(5 * time.Second)):
			t.Error("not closed after engine close")
		}
	case <-time.After(wait.Budget(5 * time.Second)):
		t.Fatal("not closed after engine close")
	}
}
