package scheduler

import (
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// A container on an instance that is shut down, or does not answer, may
// still be running there: it stays Running, its attempt not written off,
// until the pool says the instance's containers are lost (destroy
// accepted, operator kill, timeout_unreachable); then it is requeued once,
// with the pool's reason, and the instance's stale list does not hold its
// next attempt back.
func TestRunningKeptUntilInstanceContainersLost(t *testing.T) {
	t.Parallel()
	clk, q, pool, s, c := newFenceEnv(t)
	s.RunPass()
	if got, _ := q.Get(c.ID); got.State != queue.Running || got.InstanceID != "i-1" {
		t.Fatalf("after the first pass: %s on %q, want Running on i-1 (adopted)", got.State, got.InstanceID)
	}

	for _, step := range []struct {
		name  string
		state worker.State
	}{
		{"unreachable", worker.StateRunning},
		{"shut down, destroy not accepted", worker.StateShutdown},
	} {
		clk.Advance(time.Minute)
		pool.views[0].State = step.state
		pool.views[0].ProbeFailing = true
		s.RunPass()
		if got, _ := q.Get(c.ID); got.State != queue.Running || got.Attempts != 1 {
			t.Fatalf("%s: container %s (attempts %d), want still Running, attempt 1", step.name, got.State, got.Attempts)
		}
	}

	clk.Advance(time.Minute)
	pool.views[0].ContainersLost = "instance i-1 destroyed (probe timeout)"
	s.RunPass()
	if got, _ := q.Get(c.ID); got.State == queue.Running {
		t.Fatalf("once lost: still Running, want requeued")
	}
	evs, err := q.Events(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	requeues := 0
	for _, ev := range evs {
		if ev.Target == c.ID && ev.Action == string(queue.Queued) && strings.Contains(ev.Reason, "destroyed (probe timeout)") {
			requeues++
		}
	}
	if requeues != 1 {
		t.Fatalf("%d requeues with the pool's reason, want 1: %+v", requeues, evs)
	}
	for range 3 {
		clk.Advance(time.Second)
		s.RunPass()
	}
	// The written-off instance's stale list, still showing it running,
	// does not hold it back: it waits for an instance, not for the old
	// attempt.
	if got, _ := q.Get(c.ID); got.State == queue.Running || strings.Contains(got.Reason, "previous attempt") {
		t.Fatalf("after the requeue: %s, reason %q", got.State, got.Reason)
	}
}

// An exit the lost instance's last list shows is still recorded: the
// container ends Complete rather than running again.
func TestExitSeenBeforeInstanceLostCounts(t *testing.T) {
	t.Parallel()
	clk, q, pool, s, c := newFenceEnv(t)
	started := clk.Now()
	s.RunPass()
	clk.Advance(time.Minute)
	v := &pool.views[0]
	v.State, v.ContainersLost, v.ListedAt, v.Containers = worker.StateShutdown, "instance i-1 killed: retire", clk.Now(), nil
	v.Reported = []runner.Status{{ID: c.ID, PID: 7, State: runner.StateExited, StartedAt: started, FinishedAt: clk.Now()}}
	s.RunPass()
	if got, _ := q.Get(c.ID); got.State != queue.Complete || got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("container %s exit %v, want Complete with exit 0", got.State, got.ExitCode)
	}
}

// newFenceEnv is a scheduler over a real queue holding one container that
// runs on i-1, the only instance of a static pool, as i-1's runner reports.
func newFenceEnv(t *testing.T) (*clock.Fake, *queue.Queue, *staticPool, *Scheduler, view.Container) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(t, clk)
	cfg := config.Default()
	cfg.InstanceTypes = benchTypes
	c, err := q.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}, MaxAttempts: 3}, "test")
	if err != nil {
		t.Fatal(err)
	}
	typ, started := benchTypes[0], clk.Now()
	pool := &staticPool{quota: 1, views: []worker.InstanceView{{
		Instance: view.Instance{
			ID:           "i-1",
			Type:         typ.Name,
			ProviderType: typ.ProviderType,
			State:        worker.StateRunning,
			IdleBehavior: worker.IdleRun,
			Containers:   []string{c.ID},
		},
		ListedAt: started,
		Reported: []runner.Status{{ID: c.ID, PID: 7, State: runner.StateRunning, StartedAt: started}},
	}}}
	s := New(cfg, q, pool, clk, nil)
	return clk, q, pool, s, c
}
