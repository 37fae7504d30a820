package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

func TestIdleInstanceUsedBeforeCreatingAndCheapestTypeChosen(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{BootDelay: 3 * time.Second})
	a := h.submit(5*time.Second, 0)
	inst := h.runningOn(a, 30)
	if got := h.container(a).InstanceType; got != "small" {
		t.Fatalf("1 vCPU/512MiB container got type %s, want the cheapest fitting type small", got)
	}
	h.until(a+" complete", 30, func() bool { return h.state(a) == queue.Complete })
	h.until("instance idle", 10, func() bool { return h.instance(inst).State == worker.StateIdle })
	creates := h.cloud.Stats().Creates

	b := h.submit(5*time.Second, 0)
	if got := h.runningOn(b, 10); got != inst {
		t.Fatalf("second container went to %s, want the idle instance %s", got, inst)
	}
	if n := h.cloud.Stats().Creates; n != creates {
		t.Fatalf("creates went from %d to %d although an idle instance was free", creates, n)
	}

	// A container needing 3 GiB: medium (4 GiB) is the cheapest that fits.
	c := h.submit(5*time.Second, 0, ram(3*gib))
	h.runningOn(c, 30)
	if got := h.container(c).InstanceType; got != "medium" {
		t.Fatalf("3 GiB container got type %s, want medium", got)
	}
	h.checkPendingReasons()
}

// idleInstance makes an idle instance of the given type by running a
// container that needs it, and returns its id.
func idleInstance(h *harness, opts ...specOpt) string {
	h.t.Helper()
	id := h.submit(2*time.Second, 0, opts...)
	inst := h.runningOn(id, 30)
	h.until("idle "+inst, 30, func() bool { return h.state(id) == queue.Complete && h.instance(inst).State == worker.StateIdle })
	return inst
}

func TestMaxPriceFactorSharesLargerIdleInstanceWithinFactorOnly(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	medium := idleInstance(h, ram(3*gib)) // medium: 1.4 <= 1.5 × small
	large := idleInstance(h, ram(20*gib)) // large: 4.0 > 1.5 × small
	if h.instance(medium).Type != "medium" || h.instance(large).Type != "large" {
		t.Fatalf("setup: got %s and %s", h.instance(medium).Type, h.instance(large).Type)
	}
	creates := h.cloud.Stats().Creates
	a := h.submit(-1, 0)
	if got := h.runningOn(a, 10); got != medium {
		t.Fatalf("small container went to %s, want the idle medium %s (within the price factor)", got, medium)
	}
	if h.cloud.Stats().Creates != creates {
		t.Fatalf("a create happened although an idle medium was free")
	}
	b := h.submit(-1, 0)
	got := h.runningOn(b, 30)
	if got == large {
		t.Fatalf("small container went to the large instance, beyond max_price_factor")
	}
	if h.instance(got).Type != "small" || h.cloud.Stats().Creates != creates+1 {
		t.Fatalf("second small container: on %s (%s), creates %d→%d; want a new small instance", got, h.instance(got).Type, creates, h.cloud.Stats().Creates)
	}
	if len(h.cloud.RunningOn(cloud.InstanceID(large))) != 0 {
		t.Fatalf("large instance got a container")
	}
}

func TestPackingLimitAndPackVersusSpread(t *testing.T) {
	t.Run("max_containers_per_instance", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Dispatcher.MaxContainersPerInstance = 2
		cfg.InstanceTypes = cfg.InstanceTypes[2:] // large only: room for 8 by resources
		h := newHarness(t, cfg, fake.Options{BootDelay: 2 * time.Second})
		var ids []string
		for i := 0; i < 5; i++ {
			ids = append(ids, h.submit(-1, 0))
		}
		for _, id := range ids {
			h.runningOn(id, 40)
		}
		per := map[cloud.InstanceID]int{}
		for _, id := range ids {
			per[cloud.InstanceID(h.container(id).InstanceID)]++
		}
		if len(per) != 3 || h.cloud.Stats().Creates != 3 {
			t.Fatalf("5 containers at 2 per instance: %v, %d creates; want 3 instances", per, h.cloud.Stats().Creates)
		}
		for inst, n := range per {
			if n > 2 || len(h.cloud.RunningOn(inst)) > 2 {
				t.Fatalf("instance %s has %d containers, limit 2", inst, n)
			}
		}
	})
	for _, profile := range []string{"pack", "spread"} {
		t.Run(profile, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Dispatcher.MaxContainersPerInstance = 0 // by resources
			cfg.Dispatcher.SchedulerProfile = profile
			cfg.InstanceTypes = cfg.InstanceTypes[2:]
			h := newHarness(t, cfg, fake.Options{})
			// Two instances: make two containers need separate ones by
			// submitting one big and one small at once.
			big := h.submit(-1, 0, vcpus(6))
			small := h.submit(-1, 0, vcpus(6))
			i1, i2 := h.runningOn(big, 30), h.runningOn(small, 30)
			if i1 == i2 {
				t.Fatalf("setup: both on %s", i1)
			}
			if _, err := h.eng.KillContainer(small, "test", "make room"); err != nil {
				t.Fatal(err)
			}
			h.until("killed", 30, func() bool { return h.state(small) == queue.Cancelled })
			// Now i1 runs one container (6 vCPU of 8) and i2 is empty.
			c := h.submit(-1, 0, vcpus(1))
			got := h.runningOn(c, 10)
			want := i1 // pack: the busiest with room
			if profile == "spread" {
				want = i2 // spread: the least busy
			}
			if got != want {
				t.Fatalf("%s placed on %s, want %s (busy %s, empty %s)", profile, got, want, i1, i2)
			}
		})
	}
}

func TestHeldInstanceGetsNothingAndIsNeverShutDown(t *testing.T) {
	cfg := testConfig(t)
	cfg.Cloud.TimeoutIdle = 30 * time.Second
	h := newHarness(t, cfg, fake.Options{})
	held := idleInstance(h)
	v, err := h.eng.HoldInstance(held, "test", "investigating")
	if err != nil || v.IdleBehavior != worker.IdleHold {
		t.Fatalf("hold: %v %+v", err, v)
	}
	c := h.submit(5*time.Second, 0)
	got := h.runningOn(c, 30)
	if got == held {
		t.Fatalf("container started on the held instance")
	}
	// Past timeout_idle (and timeout_probe with broken probes too): the
	// held one stays, the other idle one goes.
	h.cloud.Break(cloud.InstanceID(held))
	h.step(120)
	if !slicesContains(h.live(), cloud.InstanceID(held)) {
		t.Fatalf("held instance %s was shut down automatically", held)
	}
	if slicesContains(h.live(), cloud.InstanceID(got)) {
		t.Fatalf("idle run instance %s was not shut down after timeout_idle", got)
	}
}

func slicesContains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestDrainIdleAtOnceBusyAfterContainersEnd(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	idle := idleInstance(h)
	c := h.submit(20*time.Second, 0, ram(3*gib))
	busy := h.runningOn(c, 30)

	if _, err := h.eng.DrainInstance(idle, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.step(2)
	if slicesContains(h.live(), cloud.InstanceID(idle)) {
		t.Fatalf("drained idle instance still alive")
	}
	if _, err := h.eng.DrainInstance(busy, "test", ""); err != nil {
		t.Fatal(err)
	}
	other := h.submit(-1, 0, ram(3*gib))
	h.step(3)
	if !slicesContains(h.live(), cloud.InstanceID(busy)) {
		t.Fatalf("drained busy instance shut down while its container runs")
	}
	if h.container(other).InstanceID == busy {
		t.Fatalf("drained instance got a new container")
	}
	h.until(c+" complete", 40, func() bool { return h.state(c) == queue.Complete })
	h.until("busy drained instance gone", 10, func() bool { return !slicesContains(h.live(), cloud.InstanceID(busy)) })
}

func TestKillInstanceRequeuesAndCancelsAtMaxAttempts(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	c := h.submit(-1, 0, maxAttempts(2))
	inst := h.runningOn(c, 30)
	if a := h.container(c).Attempts; a != 1 {
		t.Fatalf("attempts while running = %d, want 1", a)
	}
	if _, err := h.eng.KillInstance(inst, "test", "bad disk"); err != nil {
		t.Fatal(err)
	}
	got := h.container(c)
	if got.State != queue.Queued || got.Attempts != 1 || got.InstanceID != "" {
		t.Fatalf("after kill instance: %s attempts=%d inst=%q; want Queued with the killed attempt counted (1)", got.State, got.Attempts, got.InstanceID)
	}
	// The destroy call runs in the background: wait for it, not for the
	// next pass.
	h.eng.Settle()
	if slicesContains(h.live(), cloud.InstanceID(inst)) {
		t.Fatalf("killed instance still alive after its destroy call")
	}
	inst2 := h.runningOn(c, 30)
	if inst2 == inst || h.container(c).Attempts != 2 {
		t.Fatalf("second attempt on %s attempts=%d", inst2, h.container(c).Attempts)
	}
	if _, err := h.eng.KillInstance(inst2, "test", "again"); err != nil {
		t.Fatal(err)
	}
	got = h.container(c)
	if got.State != queue.Cancelled || got.ReasonCode != queue.ReasonMaxAttempts || got.Reason == "" {
		t.Fatalf("at max_attempts: %s %s %q; want Cancelled MAX_ATTEMPTS with a reason", got.State, got.ReasonCode, got.Reason)
	}
	if _, err := h.eng.KillInstance("no-such", "test", ""); !errors.Is(err, worker.ErrNotFound) {
		t.Fatalf("kill unknown instance: %v", err)
	}
}

func TestAtQuotaHeadStaysLockedOthersUnlockIdleShutDown(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{Quota: 2})
	large := idleInstance(h, ram(20*gib)) // not needed by small containers
	// Held while the pool learns the quota, so it is not shut down yet:
	// creates run concurrently with a pass, and which container meets the
	// quota first depends on which create fails first.
	if _, err := h.eng.HoldInstance(large, "test", ""); err != nil {
		t.Fatal(err)
	}
	a := h.submit(-1, 0)
	h.runningOn(a, 30) // quota now full: large + small
	b := h.submit(-1, 0, prio(5))
	c := h.submit(-1, 0, prio(3))
	d := h.submit(-1, 0, prio(1))
	h.until("quota learned", 20, func() bool { limit, at := h.eng.pool.Quota(); return limit == 2 && at })
	h.step(2) // creates in flight at the time have failed too
	if got := h.container(b); got.State != queue.Locked || got.ReasonCode != queue.ReasonQuota {
		t.Fatalf("head %s at quota: %s %s, want Locked QUOTA", b, got.State, got.ReasonCode)
	}
	for _, id := range []string{c, d} {
		if got := h.container(id); got.State != queue.Queued || got.ReasonCode != queue.ReasonPosition {
			t.Fatalf("%s at quota: %s %s, want Queued POSITION", id, got.State, got.ReasonCode)
		}
	}
	if !slicesContains(h.live(), cloud.InstanceID(large)) {
		t.Fatalf("held instance shut down")
	}
	// Released, the idle large instance is not needed: it is shut down so
	// the head gets the freed quota.
	if _, err := h.eng.RunInstance(large, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("large instance shut down", 20, func() bool { return !slicesContains(h.live(), cloud.InstanceID(large)) })
	h.runningOn(b, 30)
	if h.state(c) == queue.Running || h.state(d) == queue.Running {
		t.Fatalf("lower containers started beyond quota")
	}
	if len(h.live()) > 2 {
		t.Fatalf("%d instances, quota 2", len(h.live()))
	}
	h.checkPendingReasons()
}

func TestEightEqualContainersQuotaTwoThirtyPasses(t *testing.T) {
	cfg := testConfig(t)
	cfg.Cloud.MaxConcurrentCreates = 1
	h := newHarness(t, cfg, fake.Options{Quota: 2, BootDelay: 3 * time.Second})
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, h.submit(-1, 0))
	}
	h.step(30)
	starts := 0
	for _, id := range ids {
		starts += h.cloud.StartCount(id)
	}
	if starts != 2 {
		t.Fatalf("%d starts, want exactly 2 at quota 2%s", starts, h.dumpContainers())
	}
	evs, err := h.eng.Events(0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	unlocks := map[string]int{}
	for _, e := range evs {
		if e.Kind == "state" && e.Action == string(queue.Queued) {
			unlocks[e.Target]++
		}
	}
	for id, n := range unlocks {
		if n > 1 {
			t.Fatalf("container %s unlocked %d times", id, n)
		}
	}
	h.checkPendingReasons()
}

func TestLowerPriorityStartsOnIdleWhileHigherWaitsForBoot(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	small := idleInstance(h)
	h.cloud.Configure(func(f *fake.Faults) { f.BootDelay = 20 * time.Second })
	high := h.submit(-1, 0, prio(10), ram(20*gib)) // needs large: booting
	low := h.submit(-1, 0, prio(1))
	got := h.runningOn(low, 5)
	if got != small {
		t.Fatalf("low-priority container on %s, want idle %s", got, small)
	}
	hc := h.container(high)
	if hc.State != queue.Locked || hc.ReasonCode != queue.ReasonBooting {
		t.Fatalf("high-priority container: %s %s, want Locked BOOTING", hc.State, hc.ReasonCode)
	}
	h.runningOn(high, 40)
}

func TestUnknownContainerOnRunnerIsKilled(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	inst := idleInstance(h)
	exec, err := h.cloud.ExecutorByID(cloud.InstanceID(inst))
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.Client{Exec: exec, Path: h.cfg.Cloud.RunnerPath}
	if err := rc.Start(context.Background(), runner.Spec{ID: "stray-1", Command: []string{"run-forever"}}); err != nil {
		t.Fatal(err)
	}
	h.until("stray container killed", 20, func() bool { return len(h.cloud.RunningOn(cloud.InstanceID(inst))) == 0 })
}

func TestRunningOnNoInstanceWaitsWhileAnyInstanceUnknown(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	other := idleInstance(h)
	c := h.submit(-1, 0, ram(3*gib))
	inst := h.runningOn(c, 30)
	if err := h.eng.Close(); err != nil {
		t.Fatal(err)
	}
	// While the dispatcher is down its instance vanishes and another one
	// stops answering, so it stays unknown after restart.
	h.cloud.Vanish(cloud.InstanceID(inst))
	h.cloud.Break(cloud.InstanceID(other))
	h.start()
	h.step(90) // past stale_lock_timeout
	if got := h.container(c); got.State != queue.Running {
		t.Fatalf("container on vanished instance: %s while %s is unknown; want still Running", got.State, other)
	}
	if h.instance(other).State != worker.StateUnknown {
		t.Fatalf("setup: %s is %s", other, h.instance(other).State)
	}
	h.cloud.Unbreak(cloud.InstanceID(other))
	h.until("requeued", 20, func() bool { return h.container(c).Attempts == 2 || h.state(c) == queue.Queued })
}

func TestRestartRestoresIdleBehaviorAndReadoptsContainers(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	held := idleInstance(h)
	a := h.submit(40*time.Second, 3)
	b := h.submit(40*time.Second, 0, ram(3*gib))
	ia, ib := h.runningOn(a, 30), h.runningOn(b, 30)
	if _, err := h.eng.HoldInstance(held, "test", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.DrainInstance(ib, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.step(2) // let the tags be written
	h.restart()
	h.step(3)
	if got := h.instance(held).IdleBehavior; got != worker.IdleHold {
		t.Fatalf("after restart %s is %s, want hold", held, got)
	}
	if got := h.instance(ib).IdleBehavior; got != worker.IdleDrain {
		t.Fatalf("after restart %s is %s, want drain", ib, got)
	}
	if h.container(a).InstanceID != ia || h.state(a) != queue.Running {
		t.Fatalf("container %s not re-adopted on %s: %+v", a, ia, h.container(a))
	}
	h.until("both complete", 60, func() bool { return h.state(a) == queue.Complete && h.state(b) == queue.Complete })
	for _, id := range []string{a, b} {
		if n := h.cloud.StartCount(id); n != 1 {
			t.Fatalf("container %s started %d times", id, n)
		}
	}
	if ec := h.container(a).ExitCode; ec == nil || *ec != 3 {
		t.Fatalf("exit code %v, want 3", ec)
	}
	h.until("drained instance gone", 10, func() bool { return !slicesContains(h.live(), cloud.InstanceID(ib)) })
}

func TestCapacityFallbackAndRateLimit(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{CapacityErrorTypes: []string{"small"}})
	a := h.submit(-1, 0)
	inst := h.runningOn(a, 30)
	if got := h.instance(inst).Type; got != "medium" {
		t.Fatalf("with small out of capacity got %s, want medium (next within the price factor)", got)
	}
	// Small is retried after its back-off: still out, so medium again.
	h.step(70)
	before := h.cloud.Stats().Creates
	b := h.submit(-1, 0)
	h.runningOn(b, 30)
	if h.cloud.Stats().Creates < before+2 {
		t.Fatalf("small was not tried again after its back-off (creates %d→%d)", before, h.cloud.Stats().Creates)
	}
	h.cloud.Configure(func(f *fake.Faults) { f.CapacityErrorTypes["small"] = false })
	h.step(70)
	c := h.submit(-1, 0)
	if got := h.instance(h.runningOn(c, 30)).Type; got != "small" {
		t.Fatalf("after capacity returned got %s, want small", got)
	}

	// Rate limit: no cloud call until its time.
	until := h.clk.Now().Add(30 * time.Second)
	h.cloud.Configure(func(f *fake.Faults) { f.RateLimitedUntil = until })
	d := h.submit(-1, 0, ram(3*gib))
	h.step(1) // the create meets the rate limit
	created := h.cloud.Stats().Created
	for h.clk.Now().Before(until.Add(-time.Second)) {
		h.step(1)
		if h.cloud.Stats().Created != created {
			t.Fatalf("instance created during the rate-limit pause")
		}
	}
	h.runningOn(d, 30)
}

func TestContainerVerbsAndPause(t *testing.T) {
	cfg := testConfig(t)
	h := newHarness(t, cfg, fake.Options{Quota: 1})
	// hold / release
	a := h.submit(2*time.Second, 0)
	if _, err := h.eng.HoldContainer(a, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.step(10)
	if got := h.container(a); got.State != queue.Queued || got.ReasonCode != queue.ReasonHeld {
		t.Fatalf("held: %s %s", got.State, got.ReasonCode)
	}
	if _, err := h.eng.ReleaseContainer(a, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("released completes", 30, func() bool { return h.state(a) == queue.Complete })

	// priority: with one instance, the raised one goes first.
	blocker := h.submit(-1, 0)
	h.runningOn(blocker, 10)
	lo := h.submit(2*time.Second, 0, prio(1))
	hi := h.submit(2*time.Second, 0, prio(2))
	if _, err := h.eng.SetPriority(lo, 9, "test", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.KillContainer(blocker, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("blocker cancelled", 20, func() bool { return h.state(blocker) == queue.Cancelled })
	if got := h.container(blocker); got.Reason != "killed by operator" || got.ReasonCode != queue.ReasonKilled {
		t.Fatalf("killed running container: %q %s", got.Reason, got.ReasonCode)
	}
	h.until("raised container runs first", 10, func() bool { return h.state(lo) != queue.Queued && h.state(lo) != queue.Locked })
	if h.state(hi) == queue.Running || h.state(hi) == queue.Complete {
		t.Fatalf("lower-priority container started first")
	}

	// kill a queued container: Cancelled at once.
	q := h.submit(-1, 0, prio(0))
	if got, err := h.eng.KillContainer(q, "test", ""); err != nil || got.State != queue.Cancelled {
		t.Fatalf("kill queued: %v %s", err, got.State)
	}

	h.until("hi done", 30, func() bool { return h.state(hi) == queue.Complete })
	// pause: nothing starts, no instance is created; resume starts it.
	if err := h.eng.Pause("test", "maintenance"); err != nil {
		t.Fatal(err)
	}
	p := h.submit(-1, 0, ram(3*gib), prio(100))
	creates := h.cloud.Stats().Creates
	h.step(10)
	if got := h.container(p); got.State != queue.Queued || got.ReasonCode != queue.ReasonPaused {
		t.Fatalf("paused: %s %s", got.State, got.ReasonCode)
	}
	if h.cloud.Stats().Creates != creates {
		t.Fatalf("instance created while paused")
	}
	if err := h.eng.Resume("test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("resumed creates", 10, func() bool { return h.cloud.Stats().Creates > creates || h.state(p) != queue.Queued })
	h.checkPendingReasons()
}

func TestKillRunningContainerTermThenKill(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	c := h.submitCmd([]string{"run-forever", fake.IgnoreTerm})
	inst := h.runningOn(c, 30)
	if _, err := h.eng.KillContainer(c, "test", "stuck"); err != nil {
		t.Fatal(err)
	}
	// The engine sent TERM; the passes that see it still running must not
	// count (or send) it again.
	kills := 0
	for i := 0; i < 5; i++ {
		kills += h.eng.Step().Kills
		h.eng.Settle()
		h.clk.Advance(time.Second)
	}
	if h.state(c) != queue.Running || len(h.cloud.RunningOn(cloud.InstanceID(inst))) != 1 {
		t.Fatalf("container ignoring TERM ended before kill_grace")
	}
	h.until("killed after grace", 20, func() bool { return h.state(c) == queue.Cancelled })
	if kills != 0 {
		t.Fatalf("the scheduler counted %d kills of a container the operator killed, want 0", kills)
	}
	got := h.container(c)
	if got.Reason != "stuck" || got.ExitCode == nil || *got.ExitCode != fake.ExitKill {
		t.Fatalf("after KILL: reason %q exit %v", got.Reason, got.ExitCode)
	}
}

func TestSubmitRefusesWhatNoTypeHolds(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	for _, tc := range []struct {
		name string
		rc   queue.Constraints
		want string
	}{
		{"ram", queue.Constraints{VCPUs: 1, RAM: 64 * gib}, "largest is 32GiB"},
		{"vcpus", queue.Constraints{VCPUs: 64}, "largest is 8"},
		{"gpus", queue.Constraints{VCPUs: 1, GPUs: 1}, "GPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.eng.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: tc.rc}, "test")
			var nf *NoFitError
			if !errors.As(err, &nf) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "large (8 vCPU") {
				t.Fatalf("got %v, want NoFitError mentioning %q and the types", err, tc.want)
			}
		})
	}
	if _, err := h.eng.Submit(queue.Spec{Command: nil}, "test"); err == nil {
		t.Fatalf("empty command accepted")
	}
	if total, _ := h.eng.queue.Len(); total != 0 {
		t.Fatalf("refused submits stored %d containers", total)
	}
}

func TestProbeFailingInstanceGetsNoContainers(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	broken := idleInstance(h)
	h.cloud.Break(cloud.InstanceID(broken))
	h.until("probe failing", 10, func() bool { return h.instance(broken).ProbeFailing })
	c := h.submit(-1, 0)
	got := h.runningOn(c, 30)
	if got == broken {
		t.Fatalf("container placed on an instance whose probes fail")
	}
	if a := h.container(c).Attempts; a != 1 {
		t.Fatalf("attempts %d, want 1 (no refused starts)", a)
	}
}

// A container on an instance shut down for failing probes may still be
// running there: it is requeued only once the provider accepts the
// destroy (docs/design.md §10.1).
func TestContainersRequeuedOnceTheirInstanceIsDestroyed(t *testing.T) {
	cfg := testConfig(t)
	cfg.Cloud.TimeoutProbe = 30 * time.Second
	h := newHarness(t, cfg, fake.Options{})
	c := h.submit(-1, 0)
	inst := h.runningOn(c, 30)
	// Its probes fail until timeout_probe shuts it down; the destroy
	// keeps failing, so the instance stays listed in state shutdown.
	h.cloud.Break(cloud.InstanceID(inst))
	h.cloud.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 1 })
	h.until("instance shut down", 60, func() bool { return h.instance(inst).State == worker.StateShutdown })
	h.step(2)
	if _, still := h.eng.Instance(inst); !still {
		t.Fatalf("setup: instance %s left the pool", inst)
	}
	if got := h.container(c); got.State != queue.Running || got.InstanceID != inst || got.Attempts != 1 {
		t.Fatalf("requeued before the destroy was accepted: %s on %q, attempts %d", got.State, got.InstanceID, got.Attempts)
	}
	h.cloud.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 0 })
	h.until("requeued once destroyed", 60, func() bool { return h.container(c).InstanceID != inst })
	if got := h.container(c); got.State == queue.Running && got.Attempts != 2 {
		t.Fatalf("after the destroy: %s, attempts %d", got.State, got.Attempts)
	}
}

// A start call whose outcome is unknown (the connection dropped after the
// request may have reached the runner) is not a failure: the runner's next
// listing decides. A start that ran is kept (one attempt, one run). One the
// listing does not show goes back to the queue with its attempt counted,
// whether it never ran or ran and had its record lost before that listing:
// the dispatcher cannot tell the two apart, and max_attempts must bound the
// runs.
func TestStartWithUnknownOutcomeIsSettledByTheRunnerList(t *testing.T) {
	for _, tc := range []struct {
		name           string
		loss           fake.Loss
		crash          bool // the runner loses the container before the next list
		attempts, runs int
	}{
		{"reply lost, container ran", fake.LoseReply, false, 1, 1},
		{"request lost, container did not run", fake.LoseRequest, false, 2, 1},
		{"reply lost, container ran and was lost", fake.LoseReply, true, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig(t), fake.Options{})
			inst := idleInstance(h)
			h.cloud.LoseNextStart(tc.loss)
			c := h.submit(5*time.Second, 0)
			h.step(1) // the pass records the start and makes the call
			if st := h.cloud.Stats(); st.LostReplies+st.LostRequests != 1 {
				t.Fatalf("setup: %d lost replies, %d lost requests; want one start lost", st.LostReplies, st.LostRequests)
			}
			if tc.crash {
				h.cloud.CrashRunner(cloud.InstanceID(inst))
			}
			h.until("complete", 60, func() bool { return h.state(c) == queue.Complete })
			got := h.container(c)
			if got.Attempts != tc.attempts || h.cloud.StartCount(c) != tc.runs {
				t.Fatalf("attempts %d, runs %d: want %d and %d", got.Attempts, h.cloud.StartCount(c), tc.attempts, tc.runs)
			}
			if got.InstanceID != inst {
				t.Fatalf("ran on %s, want the idle %s", got.InstanceID, inst)
			}
		})
	}
}

// containers.keep_finished bounds the finished containers the engine keeps.
func TestKeepFinishedDropsTheOldestFinished(t *testing.T) {
	cfg := testConfig(t)
	cfg.Containers.KeepFinished = 2
	h := newHarness(t, cfg, fake.Options{})
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, h.submit(time.Duration(1+i)*time.Second, 0))
	}
	h.until("all done", 60, func() bool {
		_, ok := h.eng.Container(ids[3])
		return ok && h.state(ids[3]) == queue.Complete
	})
	h.step(2)
	cs, _ := h.eng.Containers(ListOptions{})
	var kept []string
	for _, c := range cs {
		kept = append(kept, c.ID)
	}
	slices.Sort(kept)
	want := []string{ids[2], ids[3]}
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %v; want the last two to finish %v", kept, want)
	}
}
