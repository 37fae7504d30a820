package scheduler

import (
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// After a restart, a listing can take longer than stale_lock_timeout (it
// waits on hosts that do not answer). Start-up is over then, but a Running
// container whose instance the pool does not know yet is not judged gone
// before a listing has completed; once one has, and its instance is not
// in it, it is requeued.
func TestRunningNotRequeuedBeforeTheFirstListing(t *testing.T) {
	clk, q, cfg, c := oneContainer(t)
	runOn(t, q, c.ID, "host-1")
	pool := &stubPool{unlisted: true, quota: 4}
	s := New(cfg, q, pool, clk, nil)
	for _, step := range []time.Duration{0, cfg.Dispatcher.StaleLockTimeout + time.Second, time.Minute} {
		clk.Advance(step)
		s.RunPass()
		if got, _ := q.Get(c.ID); got.State != queue.Running || got.InstanceID != "host-1" || got.Attempts != 1 {
			t.Fatalf("%s after start, no listing yet: container %s on %q, attempt %d; want Running on host-1, attempt 1",
				clk.Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), got.State, got.InstanceID, got.Attempts)
		}
	}
	pool.unlisted = false // a listing without host-1
	s.RunPass()
	if got, _ := q.Get(c.ID); got.State == queue.Running {
		t.Fatalf("after a listing without its instance, container still %s on %q; want requeued", got.State, got.InstanceID)
	}
}

// The first listing can complete between the pass's copy of the instances
// and its question whether a listing has completed: the instance it found
// is missing from the copy, and the container on it must not be judged
// gone for that (the pass reads "listed" before it copies).
func TestRunningNotRequeuedWhenTheListingEndsDuringAPass(t *testing.T) {
	clk, q, cfg, c := oneContainer(t)
	runOn(t, q, c.ID, "host-1")
	pool := &stubPool{unlisted: true, quota: 4}
	pool.afterSnapshot = func() {
		pool.unlisted = false
		pool.views = []worker.InstanceView{{Instance: view.Instance{ID: "host-1", Type: benchTypes[0].Name, State: worker.StateUnknown, IdleBehavior: worker.IdleRun}}}
		pool.afterSnapshot = nil
	}
	s := New(cfg, q, pool, clk, nil)
	clk.Advance(cfg.Dispatcher.StaleLockTimeout + time.Second) // start-up wait over
	for pass := range 2 {
		s.RunPass()
		if got, _ := q.Get(c.ID); got.State != queue.Running || got.InstanceID != "host-1" || got.Attempts != 1 {
			t.Fatalf("pass %d, the listing that found host-1 ending during the first: container %s on %q, attempt %d (%s); want Running on host-1, attempt 1",
				pass, got.State, got.InstanceID, got.Attempts, got.Reason)
		}
	}
}

// runOn records container id as Running on instance inst, as a pass that
// locked and started it would have.
func runOn(t *testing.T, q *queue.Queue, id, inst string) {
	t.Helper()
	if err := q.Pass(func(tx *queue.Tx) {
		if err := tx.Lock(tx.Get(id), benchTypes[0].Name); err != nil {
			t.Fatal(err)
		}
		if err := tx.Run(tx.Get(id), inst, benchTypes[0].Name); err != nil {
			t.Fatal(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}
