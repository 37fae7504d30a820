// Tests of the supervisor cap (docs/design.md §5) when it falls below the
// supervisors already Locked: excess Locked ones are unlocked, Running ones
// stay, and the others in the queue go on.
package scheduler

import (
	"slices"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// supEnv is a queue, a stub pool and a scheduler with supervisor_fraction
// 0.3; the cap follows the stub's quota (10 → 3, 7 → 2, 3 → 1).
type supEnv struct {
	pendingEnv
}

func newSupEnv(t *testing.T) *supEnv {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(t, clk)
	cfg := config.Default()
	cfg.InstanceTypes = benchTypes
	cfg.Dispatcher.MaxInstances = 10
	cfg.Dispatcher.SupervisorFraction = 0.3
	e := &supEnv{pendingEnv{t: t, clk: clk, cfg: cfg, q: q, pool: &stubPool{probed: true, quota: 10}}}
	e.sched = New(cfg, q, e.pool, clk, nil)
	return e
}

// add submits a small container of priority prio and returns its index.
func (e *supEnv) add(prio int, supervisor bool) int {
	e.t.Helper()
	spec := queue.Spec{Command: []string{"true"}, Priority: &prio,
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}
	spec.Scheduling.Supervisor = supervisor
	c, err := e.q.Submit(spec, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	e.ids = append(e.ids, c.ID)
	return len(e.ids) - 1
}

// runOn records container i Running on a new running instance id, which
// its runner reports.
func (e *supEnv) runOn(i int, id cloud.InstanceID) {
	e.t.Helper()
	err := e.q.Pass(func(tx *queue.Tx) {
		c := tx.Get(e.ids[i])
		if err := tx.Lock(c, benchTypes[0].Name); err != nil {
			e.t.Fatal(err)
		}
		if err := tx.Run(c, string(id), benchTypes[0].Name); err != nil {
			e.t.Fatal(err)
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	v := e.instance(id, worker.StateRunning)
	v.Containers = []string{e.ids[i]}
	v.Reported = []runner.Status{{ID: e.ids[i], PID: 100 + i, State: runner.StateRunning, StartedAt: e.clk.Now()}}
	e.pool.views = append(e.pool.views, v)
}

// get returns container i's record.
func (e *supEnv) get(i int) view.Container {
	e.t.Helper()
	c, ok := e.q.Get(e.ids[i])
	if !ok {
		e.t.Fatalf("container %d gone", i)
	}
	return c
}

// want fails unless container i is in state with reason code (and text,
// if not "").
func (e *supEnv) want(what string, i int, state queue.State, code queue.ReasonCode, text string) {
	e.t.Helper()
	c := e.get(i)
	if c.State != state || c.ReasonCode != code || (text != "" && c.Reason != text) {
		e.t.Errorf("%s: %s %s %q, want %s %s %q", what, c.State, c.ReasonCode, c.Reason, state, code, text)
	}
}

// TestUnlockExcessLockedSupervisors: a cap lowered by a quota error while
// supervisors are Locked and booting. The Running supervisor stays
// Running even over the cap; Locked ones are kept in priority order up to
// the cap and the rest unlocked, with no attempt spent; the child takes a
// booting instance one of them was waiting for, and starts on it, while
// the unlocked supervisors do not.
func TestUnlockExcessLockedSupervisors(t *testing.T) {
	t.Parallel()
	e := newSupEnv(t)
	run := e.add(1, true)
	low := e.add(1, true)
	high := e.add(2, true)
	queued := e.add(1, true)
	e.runOn(run, "i-run")
	e.pool.views = append(e.pool.views, e.instance("i-b1", worker.StateBooting), e.instance("i-b2", worker.StateBooting))

	// Cap 3 (0.3 × 10): the Running one and both Locked ones.
	e.sched.RunPass()
	e.want("cap 3, low", low, queue.Locked, queue.ReasonBooting, "")
	e.want("cap 3, high", high, queue.Locked, queue.ReasonBooting, "")
	e.want("cap 3, fourth supervisor", queued, queue.Queued, queue.ReasonSupervisorLimit, "supervisor limit (3 of 3)")

	// Cap 2: the higher-priority Locked one keeps its lock.
	e.pool.quota = 7
	e.sched.RunPass()
	e.want("cap 2, high", high, queue.Locked, queue.ReasonBooting, "")
	e.want("cap 2, low", low, queue.Queued, queue.ReasonSupervisorLimit, "supervisor limit (2 of 2)")

	// A child is refused by the cloud's quota: the estimate, and so the
	// cap, falls to 1, which the Running supervisor alone fills.
	child := e.add(1, false)
	e.pool.quota, e.pool.createErr = 3, worker.ErrAtQuota
	e.sched.RunPass()
	e.want("cap 1, running supervisor", run, queue.Running, queue.ReasonNone, "")
	if c := e.get(run); c.KillRequested {
		t.Errorf("the Running supervisor was asked to stop for the cap")
	}
	e.want("cap 1, high", high, queue.Queued, queue.ReasonSupervisorLimit, "supervisor limit (1 of 1)")
	e.want("cap 1, low", low, queue.Queued, queue.ReasonSupervisorLimit, "supervisor limit (1 of 1)")
	e.want("cap 1, child", child, queue.Locked, queue.ReasonBooting, "")
	for _, i := range []int{low, high} {
		if c := e.get(i); c.Attempts != 0 || c.InstanceType != "" {
			t.Errorf("unlocked supervisor %d: %d attempts, type %q; want 0 and none", i, c.Attempts, c.InstanceType)
		}
	}

	// The instances boot: the child starts, the unlocked supervisors do
	// not (nor does the cap let them take the idle instance left over).
	for k := range e.pool.views {
		if e.pool.views[k].State == worker.StateBooting {
			e.pool.views[k].State = worker.StateIdle
		}
	}
	e.sched.RunPass()
	if !slices.Equal(e.pool.started, []string{e.ids[child]}) {
		t.Errorf("started %v, want only the child %s", e.pool.started, e.ids[child])
	}
	e.want("after boot, child", child, queue.Running, queue.ReasonNone, "")
	e.want("after boot, high", high, queue.Queued, queue.ReasonSupervisorLimit, "supervisor limit (1 of 1)")
}

// TestSkipLockedSupervisorOverCap: a supervisor Locked in an earlier pass
// is over the cap when instances are ready. It is neither started nor
// left holding its lock, and the containers behind it (lower priority,
// and equal but later) start on the instances instead.
func TestSkipLockedSupervisorOverCap(t *testing.T) {
	t.Parallel()
	e := newSupEnv(t)
	e.pool.quota = 3 // cap 1
	run := e.add(1, true)
	locked := e.add(2, true)
	equal := e.add(2, false)
	lower := e.add(1, false)
	e.runOn(run, "i-run")
	e.lock(locked)
	e.pool.views = append(e.pool.views, e.instance("i-1", worker.StateIdle), e.instance("i-2", worker.StateIdle))

	e.sched.RunPass()
	e.want("supervisor over the cap", locked, queue.Queued, queue.ReasonSupervisorLimit, "supervisor limit (1 of 1)")
	e.want("equal priority", equal, queue.Running, queue.ReasonNone, "")
	e.want("lower priority", lower, queue.Running, queue.ReasonNone, "")
	e.want("running supervisor", run, queue.Running, queue.ReasonNone, "")
	if slices.Contains(e.pool.started, e.ids[locked]) {
		t.Errorf("started %v: the supervisor over the cap among them", e.pool.started)
	}
}

// TestRunningSupervisorsOverCapStay: supervisors already Running are never
// stopped for the cap, however far it falls; a waiting one counts them.
func TestRunningSupervisorsOverCapStay(t *testing.T) {
	t.Parallel()
	e := newSupEnv(t)
	e.pool.quota = 3 // cap 1
	var running []int
	for k := range 3 {
		i := e.add(1, true)
		e.runOn(i, cloud.InstanceID("i-"+string(rune('a'+k))))
		running = append(running, i)
	}
	waiting := e.add(1, true)
	e.pool.views = append(e.pool.views, e.instance("i-idle", worker.StateIdle))
	e.sched.RunPass()
	for _, i := range running {
		if c := e.get(i); c.State != queue.Running || c.KillRequested {
			t.Errorf("running supervisor %d: %s, kill requested %v", i, c.State, c.KillRequested)
		}
	}
	e.want("waiting supervisor", waiting, queue.Queued, queue.ReasonSupervisorLimit, "supervisor limit (3 of 1)")
	if len(e.pool.started) != 0 {
		t.Errorf("started %v, want none", e.pool.started)
	}
}
