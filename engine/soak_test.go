package engine

import (
	"errors"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"dispatch-tui/cloud/cloudtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

var soakContainers = flag.Int("soak.containers", 600, "containers in TestChaosSoak (make soak: 2000)")
var soakBudget = flag.Duration("soak.budget", 90*time.Second, "wall-clock budget for TestChaosSoak (make soak: 10m)")

// TestChaosSoak runs the engine against a cloud that fails in every way the
// cloudtest driver knows, on a fake clock, and checks invariants at every
// step: no container on two instances, never more instances than
// max_instances, no held instance shut down automatically. In the end every
// container is Complete or Cancelled with a reason, and no instance is left
// once the queue drains and idle timeouts pass.
func TestChaosSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak skipped in -short mode")
	}
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "one runner call per verb", true: "runner batch"}[batch], func(t *testing.T) {
			chaosSoak(t, batch)
		})
	}
}

func chaosSoak(t *testing.T, batch bool) {
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 20
	cfg.Dispatcher.MaxContainersPerInstance = 2
	// medium is always out of capacity: containers that need it must be
	// able to fall back to large.
	cfg.Dispatcher.MaxPriceFactor = 3
	cfg.Cloud.TimeoutIdle = 2 * time.Minute
	cfg.Cloud.TimeoutBooting = 3 * time.Minute
	cfg.Cloud.TimeoutProbe = 2 * time.Minute
	cfg.Cloud.TimeoutShutdown = 30 * time.Second
	cfg.Cloud.SyncInterval = 10 * time.Second
	cfg.Cloud.ProbeInterval = 2 * time.Second
	h := newHarnessOpts(t, cfg, batch, cloudtest.Options{
		Seed:               42,
		CreateErrorRate:    0.20,
		DestroyErrorRate:   0.10,
		Quota:              10,
		CapacityErrorTypes: []string{"medium"},
		RateLimitRate:      0.005,
		RateLimitFor:       15 * time.Second,
		BootDelay:          20 * time.Second,
		BrokenRate:         0.03,
		RunnerCrashRate:    0.05,
		VanishRate:         0.002,
		LostReplyRate:      0.01,
		LostRequestRate:    0.01,
	})
	rng := rand.New(rand.NewPCG(7, 9))
	n := *soakContainers
	ids := make([]string, 0, n)
	submitted := 0
	submitSome := func(k int) {
		for ; k > 0 && submitted < n; k-- {
			d := time.Duration(5+rng.IntN(115)) * time.Second
			code := 0
			if rng.IntN(10) == 0 {
				code = 1 + rng.IntN(3)
			}
			opts := []specOpt{prio(1 + rng.IntN(5))}
			switch r := rng.IntN(20); {
			case r == 0:
				opts = append(opts, ram(20*gib)) // large only
			case r < 4:
				opts = append(opts, ram(3*gib)) // medium (out of capacity) or large
			}
			spec := queue.Spec{Command: cloudtest.Cmd(d, code), RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
			for _, o := range opts {
				o(&spec)
			}
			if rng.IntN(5) == 0 {
				spec.RestartPolicy = queue.RestartOnFailure
			}
			c, err := h.eng.Submit(spec, "soak")
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, c.ID)
			submitted++
		}
	}

	held := ""
	heldShutdown := func() bool {
		if held == "" {
			return false
		}
		evs, _ := h.eng.Events(0, 1<<30)
		for _, e := range evs {
			if e.Target == held && e.Kind == worker.EventShutdown {
				return true
			}
		}
		return false
	}
	check := func(step int) {
		for id, on := range h.cloud.RunningAnywhere() {
			if len(on) > 1 {
				t.Fatalf("step %d: container %s runs on %v at once", step, id, on)
			}
		}
		if live := len(h.cloud.Live()); live > cfg.Dispatcher.MaxInstances {
			t.Fatalf("step %d: %d instances, max_instances %d", step, live, cfg.Dispatcher.MaxInstances)
		}
	}
	allFinal := func() bool {
		if submitted < n {
			return false
		}
		total, active := h.eng.queue.Len()
		return total == n && active == 0
	}

	start := time.Now()
	step := 0
	for ; !allFinal(); step++ {
		if time.Since(start) > *soakBudget {
			sum := h.eng.Summary()
			reasons := map[string]int{}
			cs, _ := h.eng.Containers(ListOptions{States: []queue.State{queue.Queued, queue.Locked}})
			for _, c := range cs {
				reasons[string(c.State)+" "+string(c.ReasonCode)+": "+c.Reason]++
			}
			t.Logf("stuck: %v\ninstances: %+v\ncloud live %v stats %+v\npool %+v", reasons, h.eng.Instances(), h.cloud.Live(), h.cloud.Stats(), h.eng.PoolStats())
			t.Fatalf("soak budget %s spent after %d steps (%s simulated): %v containers", *soakBudget, step, time.Duration(step)*time.Second, sum.Containers)
		}
		if step%2 == 0 {
			submitSome(3)
		}
		if held == "" && step > 300 {
			for _, v := range h.eng.Instances() {
				if v.State == worker.StateRunning && v.IdleBehavior == worker.IdleRun {
					if _, err := h.eng.HoldInstance(string(v.ID), "soak", "invariant check"); err == nil {
						held = string(v.ID)
					}
					break
				}
			}
		}
		if held != "" && step == 3000 {
			if _, err := h.eng.RunInstance(held, "soak", "release hold"); err != nil && !isNotFound(err) {
				t.Fatal(err)
			}
			if heldShutdown() {
				t.Fatalf("held instance %s was shut down automatically", held)
			}
			held = ""
		}
		h.step(1)
		check(step)
	}
	if held != "" && heldShutdown() {
		t.Fatalf("held instance %s was shut down automatically", held)
	}
	byState := map[queue.State]int{}
	overcounted := 0
	for _, id := range ids {
		c := h.container(id)
		byState[c.State]++
		// Attempts bound the runs (max_attempts must hold). An attempt
		// may count a run that never happened only when its instance
		// vanished or was shut down before any runner listing showed it.
		if runs := h.cloud.StartCount(id); runs > c.Attempts {
			t.Fatalf("container %s ran %d times but records %d attempts", id, runs, c.Attempts)
		} else if runs < c.Attempts {
			overcounted++
		}
		if c.State == queue.Cancelled && (c.Reason == "" || c.ReasonCode == "") {
			t.Fatalf("container %s Cancelled without a reason", id)
		}
	}
	if held != "" {
		h.eng.RunInstance(held, "soak", "release hold")
	}
	// Calm the cloud down and let idle timeouts pass: nothing may be left.
	h.cloud.SetCreateErrorRate(0)
	h.cloud.SetDestroyErrorRate(0)
	h.cloud.SetRateLimitRate(0)
	h.cloud.SetVanishRate(0)
	drainSteps := 0
	for ; len(h.cloud.Live()) > 0; drainSteps++ {
		if drainSteps > 1800 {
			t.Fatalf("instances left %s after the queue drained: %v\n%+v", time.Duration(drainSteps)*time.Second, h.cloud.Live(), h.eng.Instances())
		}
		h.step(1)
	}
	st := h.cloud.Stats()
	t.Logf("soak: %d containers %v in %d steps (%s simulated, %s real); cloud: %d creates (%d failed), %d destroys (%d failed), %d rate-limited calls, %d vanished, %d runner crashes, %d lost replies, %d lost requests; drained in %ds; %d containers with an attempt that never ran",
		n, byState, step, time.Duration(step)*time.Second, time.Since(start).Round(time.Millisecond),
		st.Creates, st.CreateErrors, st.Destroys, st.DestroyErrors, st.RateLimited, st.Vanished, st.Crashed, st.LostReplies, st.LostRequests, drainSteps, overcounted)
	if byState[queue.Complete]+byState[queue.Cancelled] != n {
		t.Fatalf("final states %v do not add up to %d", byState, n)
	}
}

func isNotFound(err error) bool { return errors.Is(err, worker.ErrNotFound) }
