package scheduler

import (
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// quietWorld is a real queue on a fake clock, the stub pool and a
// scheduler, stepped as the engine steps it: a pass only when Quiet says
// one would change something.
type quietWorld struct {
	*pendingEnv
	skipped int
}

func newQuietWorld(t *testing.T, n int, spec func(*queue.Spec)) *quietWorld {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(t, clk)
	cfg := config.Default()
	cfg.InstanceTypes = benchTypes
	e := &pendingEnv{t: t, clk: clk, cfg: cfg, q: q, pool: &stubPool{probed: true, quota: 3}}
	for range n {
		s := queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}
		if spec != nil {
			spec(&s)
		}
		c, err := q.Submit(s, "test")
		if err != nil {
			t.Fatal(err)
		}
		e.ids = append(e.ids, c.ID)
	}
	e.sched = New(cfg, q, e.pool, clk, nil)
	return &quietWorld{pendingEnv: e}
}

// step is the engine's: skip the pass if Quiet says so, and then check,
// by running it all the same, that it would have changed nothing: no
// record, no pool verb, the same Stats. It reports whether the pass was
// skipped.
func (w *quietWorld) step() (skipped bool) {
	w.t.Helper()
	st, quiet := w.sched.Quiet()
	if !quiet {
		w.sched.RunPass()
		return false
	}
	w.skipped++
	gen := w.q.Generation()
	created, started, shut := len(w.pool.created), len(w.pool.started), len(w.pool.shutdowns)
	got := w.sched.RunPass()
	if w.q.Generation() != gen || len(w.pool.created) != created || len(w.pool.started) != started || len(w.pool.shutdowns) != shut {
		w.t.Fatalf("at %s Quiet said a pass would change nothing, and one changed: generation %d → %d, creates %d → %d, starts %d → %d, shutdowns %d → %d",
			w.clk.Now().Format(time.TimeOnly), gen, w.q.Generation(), created, len(w.pool.created), started, len(w.pool.started), shut, len(w.pool.shutdowns))
	}
	got.Duration, st.Duration = 0, 0
	if got.LongestWait != st.LongestWait || got.OverQuota != st.OverQuota || got.AtQuota != st.AtQuota || got.QuotaLimit != st.QuotaLimit ||
		got.AllocatedNotStart != st.AllocatedNotStart || len(got.ByState) != len(st.ByState) {
		w.t.Fatalf("at %s the skipped pass's Stats %+v differ from a real one's %+v", w.clk.Now().Format(time.TimeOnly), st, got)
	}
	return true
}

// reason is container i's pending reason code.
func (w *quietWorld) reason(i int) queue.ReasonCode {
	w.t.Helper()
	c, ok := w.q.Get(w.ids[i])
	if !ok {
		w.t.Fatalf("container %s gone", w.ids[i])
	}
	return c.ReasonCode
}

// TestQuietPassesAreSkipped: on a queue where nothing can change (paused,
// no type fits, held), the passes after the first are skipped, however
// many, and the longest wait still grows in the Stats they report.
func TestQuietPassesAreSkipped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(w *quietWorld)
		spec  func(*queue.Spec)
		want  queue.ReasonCode
	}{
		{name: "paused", setup: func(w *quietWorld) {
			if err := w.q.SetPaused(true, "test", ""); err != nil {
				t.Fatal(err)
			}
		}, want: queue.ReasonPaused},
		{name: "no type fits", spec: func(s *queue.Spec) { s.RuntimeConstraints.VCPUs = 1000 }, want: queue.ReasonNoFit},
		{name: "held", setup: func(w *quietWorld) {
			for _, id := range w.ids {
				if _, err := w.q.Hold(id, "test", ""); err != nil {
					t.Fatal(err)
				}
			}
		}, want: queue.ReasonHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newQuietWorld(t, 50, tc.spec)
			if tc.setup != nil {
				tc.setup(w)
			}
			w.step() // sets the reasons
			w.step() // finds them set: quiet from here on
			passes := w.sched.Passes()
			for range 100 {
				w.clk.Advance(time.Second)
				st, quiet := w.sched.Quiet()
				if !quiet {
					t.Fatalf("at %s a pass would run on a queue where nothing changed (%d passes so far)", w.clk.Now().Format(time.TimeOnly), w.sched.Passes())
				}
				if want := w.clk.Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); st.LongestWait != want {
					t.Fatalf("a skipped pass reports the longest wait %s, want %s", st.LongestWait, want)
				}
			}
			if got := w.sched.Passes(); got != passes {
				t.Errorf("%d passes over 100 quiet ticks, want none", got-passes)
			}
			if got := w.reason(0); got != tc.want {
				t.Errorf("reason %s, want %s", got, tc.want)
			}
			// A change is the next pass's at once: a container submitted
			// is mapped.
			c, err := w.q.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1000, RAM: 1 << 30}}, "test")
			if err != nil {
				t.Fatal(err)
			}
			if _, quiet := w.sched.Quiet(); quiet {
				t.Fatal("a submit left the queue quiet")
			}
			w.step()
			if got, _ := w.q.Get(c.ID); got.ReasonCode == "" {
				t.Errorf("the submitted container has no reason after the next step: %+v", got)
			}
		})
	}
}

// TestQuietPassesKeepTheirDeadlines: each thing a pass does when a time
// comes, with nothing else changing, still happens at that time when the
// passes before it were skipped: the start-up wait's end, max_run_time,
// a type's boot back-off beginning and ending, the quota limit, a start
// failure, an instance's change; and at quota no pass is skipped.
func TestQuietPassesKeepTheirDeadlines(t *testing.T) {
	t.Parallel()
	t.Run("start-up wait", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 3, nil)
		w.pool.probed = false // an instance not probed yet: the wait lasts stale_lock_timeout
		w.pool.views = []worker.InstanceView{w.instance("i-busy", worker.StateUnknown)}
		end := w.clk.Now().Add(w.cfg.Dispatcher.StaleLockTimeout)
		for w.clk.Now().Before(end) {
			w.step()
			if got := w.reason(0); got != queue.ReasonStartup {
				t.Fatalf("at %s, before the wait ends: reason %s", w.clk.Now().Format(time.TimeOnly), got)
			}
			w.clk.Advance(7 * time.Second)
		}
		if w.skipped == 0 {
			t.Fatal("no pass was skipped during the wait: the test shows nothing")
		}
		w.clk.Set(end)
		w.step()
		if got := w.reason(0); got == queue.ReasonStartup {
			t.Errorf("at the wait's end (%s) still %s", end.Format(time.TimeOnly), got)
		}
	})
	t.Run("max_run_time", func(t *testing.T) {
		t.Parallel()
		const mrt = 90 * time.Second
		w := newQuietWorld(t, 1, func(s *queue.Spec) { s.Scheduling.MaxRunTime = queue.Duration(mrt) })
		idle := w.instance("i-1", worker.StateIdle)
		w.pool.views = []worker.InstanceView{idle}
		w.step()
		if len(w.pool.started) != 1 {
			t.Fatalf("started %v, want the container", w.pool.started)
		}
		c, _ := w.q.Get(w.ids[0])
		run := w.instance("i-1", worker.StateRunning)
		run.Containers = []string{c.ID}
		run.Reported = []runner.Status{{ID: c.ID, State: runner.StateRunning, StartedAt: c.StartedAt}}
		w.pool.views = []worker.InstanceView{run}
		due := c.StartedAt.Add(mrt)
		for !w.clk.Now().After(due) {
			w.step()
			if c, _ := w.q.Get(w.ids[0]); c.KillRequested {
				t.Fatalf("killed at %s, before max_run_time (%s)", w.clk.Now().Format(time.TimeOnly), due.Format(time.TimeOnly))
			}
			w.clk.Advance(10 * time.Second)
		}
		if w.skipped == 0 {
			t.Fatal("no pass was skipped while it ran: the test shows nothing")
		}
		w.step()
		if c, _ := w.q.Get(w.ids[0]); !c.KillRequested {
			t.Errorf("not killed at %s, past max_run_time (%s)", w.clk.Now().Format(time.TimeOnly), due.Format(time.TimeOnly))
		}
	})
	t.Run("at quota", func(t *testing.T) {
		t.Parallel()
		// A pass at quota asked the pool to create: the answer is the
		// pool's to give again (the quota probe, a throttle or back-off
		// begun since), so every step is a pass.
		w := newQuietWorld(t, 2, nil)
		w.pool.createErr = worker.ErrAtQuota
		for range 5 {
			if w.step() {
				t.Fatal("a step at quota skipped its pass")
			}
			w.clk.Advance(time.Second)
		}
		w.pool.createErr = nil // the quota probe's extra instance
		w.step()
		if len(w.pool.created) == 0 {
			t.Fatal("the next step after the quota's rise did not create")
		}
	})
	t.Run("boot back-off and quota limit", func(t *testing.T) {
		t.Parallel()
		// Waiting on a booting instance: no create asked, so quiet; the
		// pool's answers that change with time alone are asked again.
		w := newQuietWorld(t, 1, nil)
		w.pool.views = []worker.InstanceView{w.instance("i-boot", worker.StateBooting)}
		w.step()
		w.step()
		if got := w.reason(0); got != queue.ReasonBooting {
			t.Fatalf("reason %s, want %s", got, queue.ReasonBooting)
		}
		for range 10 {
			w.clk.Advance(time.Second)
			if !w.step() {
				t.Fatalf("at %s a pass ran waiting on a booting instance with nothing changing", w.clk.Now().Format(time.TimeOnly))
			}
		}
		w.pool.bootFailing = map[string]string{benchTypes[0].Name: "boot failed"}
		w.step()
		if got := w.reason(0); got != queue.ReasonBootFailing {
			t.Fatalf("after the type's boots began failing: reason %s, want %s", got, queue.ReasonBootFailing)
		}
		w.step()
		w.pool.bootFailing = nil // its back-off over
		w.step()
		if got := w.reason(0); got != queue.ReasonBooting {
			t.Errorf("after the type's back-off ended: reason %s, want %s", got, queue.ReasonBooting)
		}
		w.step()
		w.pool.quota++
		if w.step() {
			t.Error("the pool's quota limit changing did not make the next step a pass")
		}
	})
	t.Run("start failure and instance change", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 1, func(s *queue.Spec) { s.RuntimeConstraints.VCPUs = 1000 })
		w.step() // sets the reason
		w.step() // finds it set
		if !w.step() {
			t.Fatal("nothing can start, and the third pass still ran")
		}
		w.pool.failures = []worker.StartFailure{{ContainerID: "c-gone", InstanceID: cloud.InstanceID("i-1")}}
		if w.step() {
			t.Error("a start failure did not make the next step a pass")
		}
		w.step()
		w.pool.views = []worker.InstanceView{w.instance("i-2", worker.StateBooting)}
		if w.step() {
			t.Error("an instance added did not make the next step a pass")
		}
		w.step()
		w.pool.views[0].State = worker.StateIdle
		if w.step() {
			t.Error("an instance's state changing did not make the next step a pass")
		}
	})
}
