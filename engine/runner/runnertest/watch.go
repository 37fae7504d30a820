// The conformance cases of "runner watch" exit notices.

package runnertest

// The exit notices of "runner watch" (docs/design.md §7.3): announced
// once, announced to a watch opened again after another closed, and not
// needed for the list to report an exit nobody was watching for.

import (
	"context"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// notices is one open watch: what it announced, in order (the status a
// notice carries, or just its id).
type notices struct {
	ids  chan runner.Status
	done chan error
	stop context.CancelFunc
}

// watch opens a watch and waits until it is ready; it is closed at the
// end of the test, or by close.
func (e *env) watch() *notices {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	n := &notices{ids: make(chan runner.Status, 256), done: make(chan error, 1), stop: cancel}
	ready := make(chan struct{})
	go func() {
		n.done <- e.client().Watch(ctx, func() { close(ready) }, func(id string, st *runner.Status) {
			got := runner.Status{ID: id}
			if st != nil {
				got = *st
			}
			select {
			case n.ids <- got:
			default: // the case fails on what it misses
			}
		})
	}()
	e.t.Cleanup(func() { n.close(e.t) })
	select {
	case <-ready:
	case err := <-n.done:
		n.done <- err
		e.t.Fatalf("watch ended before it was ready: %v", err)
	case <-time.After(waitFor):
		e.t.Fatalf("watch not ready after %v", waitFor)
	}
	return n
}

// close ends the watch and waits for it.
func (n *notices) close(t *testing.T) {
	if n.stop == nil {
		return
	}
	n.stop()
	n.stop = nil
	select {
	case <-n.done:
	case <-time.After(waitFor):
		t.Errorf("watch still open %v after it was closed", waitFor)
	}
}

// next returns the next notice, failing after waitFor.
func (e *env) next(n *notices, want string) runner.Status {
	e.t.Helper()
	select {
	case st := <-n.ids:
		return st
	case err := <-n.done:
		n.done <- err
		e.t.Fatalf("watch ended (%v) while waiting for %s to be announced", err, want)
	case <-time.After(waitFor):
		e.t.Fatalf("%s not announced after %v", want, waitFor)
	}
	return runner.Status{}
}

// wantNext fails unless the next notice is want's, carrying its status
// as list reports it, and returns that status.
func (e *env) wantNext(n *notices, want, why string) runner.Status {
	e.t.Helper()
	got := e.next(n, want)
	if got.ID != want {
		e.t.Fatalf("announced %s, want %s (%s)", got.ID, want, why)
	}
	if st, ok := e.status(want); got.State != runner.StateExited || !ok || !statusSame(got, st) {
		e.t.Fatalf("the notice of %s carries %+v; list says %+v", want, got, st)
	}
	return got
}

func statusSame(a, b runner.Status) bool {
	return a.ID == b.ID && a.PID == b.PID && a.State == b.State && a.ExitCode == b.ExitCode && a.Signal == b.Signal &&
		a.StartedAt.Equal(b.StartedAt) && a.FinishedAt.Equal(b.FinishedAt)
}

var watchCases = []struct {
	name string
	run  func(e *env)
}{
	{"an exit is announced once, and list <id> reads it", func(e *env) {
		n := e.watch()
		e.start("w1", Program{Exit: 3})
		if st := e.wantNext(n, "w1", "its exit"); st.ExitCode != 3 {
			e.t.Fatalf("the notice of w1 carries %+v, want exit code 3", st)
		}
		sts, err := e.client().Statuses(e.ctx, []string{"w1", "never-started"})
		if err != nil {
			e.t.Fatalf("list w1 and an unknown id: %v", err)
		}
		if len(sts) != 1 || sts[0].ID != "w1" || sts[0].State != runner.StateExited || sts[0].ExitCode != 3 {
			e.t.Fatalf("list w1 and an unknown id: %+v, want w1 alone, exited 3", sts)
		}
		// Reading it is no new exit: the next notice is the marker's.
		e.list()
		if _, err := e.client().Logs(e.ctx, "w1", 0, 0); err != nil {
			e.t.Fatal(err)
		}
		e.start("marker", Program{Exit: 0})
		e.wantNext(n, "marker", "w1 was announced already")
		// Forgotten and started again, it is a new exit.
		if err := e.client().Forget(e.ctx, "w1"); err != nil {
			e.t.Fatal(err)
		}
		e.start("w1", Program{Exit: 0})
		e.wantNext(n, "w1", "the exit of a new start under a forgotten id")
	}},
	{"a notice after a reconnect is not lost", func(e *env) {
		e.start("long", Program{Forever: true})
		e.ready("long")
		first := e.watch()
		first.close(e.t)
		n := e.watch()
		if err := e.client().Kill(e.ctx, "long", runner.SignalTerm); err != nil {
			e.t.Fatal(err)
		}
		e.wantNext(n, "long", "ended while the second watch was open")
	}},
	{"a container ended while nobody listened is still reported by the next listing", func(e *env) {
		e.start("quiet", Program{Forever: true})
		e.ready("quiet")
		if err := e.client().Kill(e.ctx, "quiet", runner.SignalTerm); err != nil {
			e.t.Fatal(err)
		}
		if st := e.waitState("quiet", runner.StateExited); st.ExitCode != exitTerm {
			e.t.Fatalf("quiet: %+v, want exited %d", st, exitTerm)
		}
		// A watch announces what ends after it is ready, not before.
		n := e.watch()
		e.start("marker", Program{Exit: 0})
		e.wantNext(n, "marker", "quiet ended before the watch")
	}},
	{"a container lost with its supervisor is not announced; the list reports it", func(e *env) {
		n := e.watch()
		e.start("crash", Program{Forever: true})
		e.ready("crash")
		e.tg.Crash(e.t, "crash")
		if st := e.waitState("crash", runner.StateExited); st.Lost == "" {
			e.t.Fatalf("crash: %+v, want lost", st)
		}
		e.start("marker", Program{Exit: 0})
		e.wantNext(n, "marker", "nothing recorded the crashed one's exit")
	}},
}
