package engine

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

var (
	// 500 in make test (one seed; the rarer faults made frequent enough,
	// and a busy spot instance interrupted, that every kind is still met);
	// make soak runs 2,000 with 16 seeds: the size finds rarer
	// interleavings, the assertions are the same at both.
	soakContainers = flag.Int("soak.containers", 500, "containers in each run of TestChaosSoak and TestChaosSoakPostgres (make soak: 2000)")
	soakSeeds      = flag.Int("soak.seeds", 1, "runs of TestChaosSoak, each with its own faults and workload (make soak: 16)")
	soakSteps      = flag.Int("soak.steps", 40000, "simulated seconds within which each run of TestChaosSoak must finish every container (a run needs about 20,000)")
	soakBudget     = flag.Duration("soak.budget", 0, "wall-clock limit for each run of TestChaosSoak (0 = none: being stuck is judged by -soak.steps, simulated seconds, and a hang is caught by go test's -timeout, which dumps every goroutine)")
)

// TestChaosSoak runs the engine against a cloud that fails in every way the
// fake driver knows, on a fake clock, and checks invariants at every
// step: no container on two instances, never more instances than
// max_instances, no held instance shut down automatically. The containers
// come in waves with quiet gaps longer than timeout_idle, so the pool
// shrinks and grows again (destroys meet their errors too), and other users
// of the account hold 0–5 instances of its quota of 10 at times, so that
// either the quota or max_instances (8) is the limit. In the end every
// container is Complete or Cancelled with a reason, no instance is left once
// the queue drains and idle timeouts pass, and every kind of fault was met.
// The soaks run in parallel with each other (each has its own engine, fake
// clock and store): one after another they made make test's longest package.
func TestChaosSoak(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("soak skipped in -short mode")
	}
	for seed := int64(42); seed < 42+int64(*soakSeeds); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { chaosSoak(t, seed, "") })
	}
}

// chaosSoak runs one seed; storeURL, when set, keeps the queue in that
// PostgreSQL database instead of the embedded store.
func chaosSoak(t *testing.T, seed int64, storeURL string) {
	cfg := testConfig(t)
	cfg.Store.URL = storeURL
	cfg.Dispatcher.MaxInstances = 8
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
	cfg.InstanceTypes = addSoakSpotType(cfg.InstanceTypes)
	soakSchedulingConfig(cfg)
	h := newHarness(t, cfg, fake.Options{
		Seed:               seed,
		CreateErrorRate:    0.20,
		DestroyErrorRate:   0.10,
		Quota:              10,
		CapacityErrorTypes: []string{"medium"},
		RateLimitRate:      0.01,
		RateLimitFor:       15 * time.Second,
		BootDelay:          20 * time.Second,
		BrokenRate:         0.03,
		RunnerCrashRate:    0.05,
		VanishFraction:     0.1,
		VanishWithin:       2 * time.Minute,
		LostReplyRate:      0.01,
		LostRequestRate:    0.01,
		SpotInterruptRate:  soakSpotInterruptRate,
	})
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	n := *soakContainers
	ids := make([]string, 0, n)
	submitted := 0
	// Waves of 100 containers; after each, a quiet gap once the queue is
	// empty, long enough for idle instances to be shut down.
	const wave = 100
	const quiet = 180 // steps; timeout_idle is 2m
	quietFrom := -1   // step at which the current gap began, -1: none
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
			opts = append(opts, soakSchedulingOpts(rng)...)
			spec := queue.Spec{Command: fake.Cmd(d, code), RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
			for _, o := range opts {
				o(&spec)
			}
			if rng.IntN(5) == 0 {
				spec.RestartPolicy = queue.RestartOnFailure
			}
			soakSpotSpec(rng, &spec)
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
			if e.Target == held && e.Kind == worker.EventShutdown && !isSpotShutdown(e.Reason) {
				return true
			}
		}
		return false
	}
	atMax := 0 // steps with max_instances of ours live
	spot := &spotInterrupter{}
	check := func(step int) {
		for id, on := range h.cloud.RunningAnywhere() {
			if len(on) > 1 {
				t.Fatalf("step %d: container %s runs on %v at once", step, id, on)
			}
		}
		// Live() is this dispatcher's instances: the other users' are
		// never listed.
		live := len(h.cloud.Live())
		if live > cfg.Dispatcher.MaxInstances {
			t.Fatalf("step %d: %d instances, max_instances %d", step, live, cfg.Dispatcher.MaxInstances)
		}
		if live == cfg.Dispatcher.MaxInstances {
			atMax++
		}
		checkSoakSpotPlacement(t, h, step)
		spot.step(h, step)
	}
	allFinal := func() bool {
		if submitted < n {
			return false
		}
		total, active := h.eng.queue.Len()
		return total == n && active == 0
	}

	quotaWatch := &soakQuotaWatch{h: h}
	start := time.Now()
	step := 0
	for ; !allFinal(); step++ {
		if step > *soakSteps || (*soakBudget > 0 && time.Since(start) > *soakBudget) {
			sum := h.eng.Summary()
			reasons := map[string]int{}
			cs, _ := h.eng.Containers(ListOptions{States: []queue.State{queue.Queued, queue.Locked}})
			for _, c := range cs {
				reasons[string(c.State)+" "+string(c.ReasonCode)+": "+c.Reason]++
			}
			t.Logf("stuck: %v\ninstances: %+v\ncloud live %v stats %+v\npool %+v", reasons, h.eng.Instances(), h.cloud.Live(), h.cloud.Stats(), h.eng.PoolStats())
			t.Fatalf("not every container final after %d steps (%s simulated, %s wall clock; limits -soak.steps %d, -soak.budget %s): %v containers",
				step, time.Duration(step)*time.Second, time.Since(start).Round(time.Second), *soakSteps, *soakBudget, sum.Containers)
		}
		if step%300 == 0 {
			// Other users of the account come and go.
			h.cloud.Configure(func(f *fake.Faults) { f.ForeignInstances = rng.IntN(6) })
		}
		switch {
		case submitted%wave != 0 || submitted == 0:
			if step%2 == 0 {
				submitSome(3)
			}
		case quietFrom < 0:
			if _, active := h.eng.queue.Len(); active == 0 {
				quietFrom = step
			}
		case step-quietFrom >= quiet:
			quietFrom = -1
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
		quotaWatch.before()
		h.step(1)
		check(step)
		quotaWatch.after(step)
	}
	if held != "" && heldShutdown() {
		t.Fatalf("held instance %s was shut down automatically", held)
	}
	quotaWatch.report()
	byState := map[queue.State]int{}
	overcounted := 0
	preempted := soakPreemptions(h) // runs that spent no attempt
	for _, id := range ids {
		c := h.container(id)
		byState[c.State]++
		// Attempts bound the runs (max_attempts must hold). An attempt
		// may count a run that never happened when its instance vanished
		// or was shut down before any runner listing showed it, or when
		// its start call failed after the request may have been sent.
		if runs := h.cloud.StartCount(id) - preempted[id]; runs > c.Attempts {
			t.Fatalf("container %s ran %d times but records %d attempts; runs: %q; events:%s", id, runs, c.Attempts, h.cloud.Starts(id), h.eventsOf(id))
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
	// Let idle timeouts pass, the faults still on: nothing may be left.
	drainSteps := 0
	for ; len(h.cloud.Live()) > 0; drainSteps++ {
		if drainSteps > 1800 {
			t.Fatalf("instances left %s after the queue drained: %v\n%+v", time.Duration(drainSteps)*time.Second, h.cloud.Live(), h.eng.Instances())
		}
		h.step(1)
	}
	st := h.cloud.Stats()
	injected := st.CreateErrors - st.QuotaErrors - st.CapacityErrors
	t.Logf("soak: %d containers %v in %d steps (%s simulated, %s real); cloud: %d creates (%d injected errors, %d quota, %d capacity), %d instances, %d destroys (%d failed), %d rate-limited calls, %d vanished (%.1f %%), %d runner crashes of %d starts, %d lost replies, %d lost requests; %d steps at max_instances; drained in %ds; %d containers with an attempt that never ran",
		n, byState, step, time.Duration(step)*time.Second, time.Since(start).Round(time.Millisecond),
		st.Creates, injected, st.QuotaErrors, st.CapacityErrors, st.Created, st.Destroys, st.DestroyErrors, st.RateLimited,
		st.Vanished, 100*float64(st.Vanished)/float64(max(st.Created, 1)), st.Crashed, st.Starts, st.LostReplies, st.LostRequests, atMax, drainSteps, overcounted)
	t.Logf("soak spot: %d interruptions, %d containers requeued by one", st.Interrupted, len(preempted))
	if byState[queue.Complete]+byState[queue.Cancelled] != n {
		t.Fatalf("final states %v do not add up to %d", byState, n)
	}
	// A soak that met no fault of a kind tested nothing of it.
	for what, count := range map[string]int{
		"injected create errors": injected, "quota errors": st.QuotaErrors, "capacity errors": st.CapacityErrors,
		"destroy errors": st.DestroyErrors, "rate limits": st.RateLimited, "vanished instances": st.Vanished,
		"runner crashes": st.Crashed, "lost replies": st.LostReplies, "lost requests": st.LostRequests,
		"steps at max_instances": atMax,

		// Preemptible containers (soak_spot_test.go).
		"spot interruptions":                         st.Interrupted,
		"containers requeued by a spot interruption": len(preempted),
	} {
		if count == 0 {
			t.Errorf("the soak met no %s", what)
		}
	}
}

func isNotFound(err error) bool { return errors.Is(err, worker.ErrNotFound) }
