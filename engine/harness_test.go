package engine

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/scheduler"
	"dispatch-tui/engine/view"
)

const gib = int64(1) << 30

// testTypes: small fits 1 vCPU/2GiB; medium is within the default price
// factor (1.5) of small; large is not.
var testTypes = []cloud.InstanceType{
	{Name: "small", ProviderType: "small", VCPUs: 1, RAM: 2 * gib, Scratch: 10 * gib, Price: 1.0},
	{Name: "medium", ProviderType: "medium", VCPUs: 2, RAM: 4 * gib, Scratch: 20 * gib, Price: 1.4},
	{Name: "large", ProviderType: "large", VCPUs: 8, RAM: 32 * gib, Scratch: 100 * gib, Price: 4.0},
}

// harness runs an Engine on the fake driver with a fake clock. Each
// step is: pool work + one pass, wait for the calls it started, advance
// the clock by one second.
type harness struct {
	t     *testing.T
	clk   *clock.Fake
	cloud *fake.Driver
	cfg   *config.Config
	eng   *Engine
	// passTotals sums the passes' Preempted and Unhealthy counts (what the
	// metrics export); atomic, as OnPass runs on the engine's goroutine.
	preempted, unhealthy atomic.Int64
}

func testConfig(t testing.TB) *config.Config {
	cfg := config.Default()
	cfg.Dispatcher.StateDir = t.TempDir()
	cfg.Cloud.Driver = "fake"
	cfg.InstanceTypes = slices.Clone(testTypes)
	cfg.Dispatcher.MaxInstances = 20
	cfg.Dispatcher.StaleLockTimeout = time.Minute
	cfg.Cloud.ProbeInterval = time.Second
	cfg.Cloud.SyncInterval = 5 * time.Second
	cfg.Cloud.TimeoutIdle = 5 * time.Minute
	cfg.Cloud.TimeoutBooting = 10 * time.Minute
	cfg.Cloud.TimeoutProbe = 10 * time.Minute
	cfg.Cloud.MaxCloudOpsPerSecond = 100
	cfg.Cloud.MaxProbesPerSecond = 100
	cfg.Cloud.MaxConcurrentCreates = 4
	cfg.Containers.KillGrace = 10 * time.Second
	return cfg
}

func newHarness(t *testing.T, cfg *config.Config, ct fake.Options) *harness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ct.Clock = clk
	h := &harness{t: t, clk: clk, cloud: fake.New(ct), cfg: cfg}
	h.start()
	return h
}

// start builds an Engine on the harness's cloud and store (again, after
// restart()).
func (h *harness) start() {
	h.t.Helper()
	eng, err := New(Options{Config: h.cfg, InstanceSet: h.cloud, NewExecutor: h.cloud.Executor, Clock: h.clk,
		OnPass: func(st scheduler.Stats) {
			h.preempted.Add(int64(st.Preempted))
			h.unhealthy.Add(int64(st.Unhealthy))
		}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.eng = eng
	h.t.Cleanup(func() {
		if h.eng == eng {
			eng.Close()
		}
	})
}

// restart simulates a dispatcher restart: the engine goes away, the cloud
// and the store stay.
func (h *harness) restart() {
	h.t.Helper()
	if err := h.eng.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.start()
}

func (h *harness) step(n int) {
	for i := 0; i < n; i++ {
		h.eng.Step()
		h.eng.Settle()
		h.clk.Advance(time.Second)
	}
}

// until steps until cond holds, failing after max steps.
func (h *harness) until(what string, max int, cond func() bool) {
	h.t.Helper()
	seen := func() string {
		return fmt.Sprintf("\ninstances: %+v\ncontainers: %s", h.eng.Instances(), h.dumpContainers())
	}
	wait.With{Step: func() { h.step(1) }, Seen: seen}.Steps(h.t, what, max, cond)
}

// runInBackground runs the engine's loop (Run) until the test ends, and
// returns a channel that receives after each of its steps.
func (h *harness) runInBackground() <-chan struct{} {
	steps, unsub := h.eng.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.eng.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-done; unsub() })
	return steps
}

// untilWatching waits until inst's runner watch is ready. The watch is a
// goroutine of real time, not of the fake clock: a loaded machine may need
// more steps than an idle one before it is ready, so this waits in real
// time, stepping the engine without advancing the clock (a container's
// end, or a watch's retry, stays where the test put it).
func (h *harness) untilWatching(inst cloud.InstanceID) {
	h.t.Helper()
	seen := func() string {
		return fmt.Sprintf("\npool: %+v\ninstances: %+v", h.eng.PoolStats(), h.eng.Instances())
	}
	step := func() {
		h.eng.Step()
		h.eng.Settle()
	}
	wait.With{Step: step, Seen: seen}.Until(h.t, "the runner watch on "+string(inst)+" ready", 10*time.Second, func() bool {
		return h.eng.PoolStats().Watching == 1
	})
}

func (h *harness) dumpContainers() string {
	cs, _ := h.eng.Containers(ListOptions{})
	s := ""
	for _, c := range cs {
		s += fmt.Sprintf("\n  %s %s prio=%d inst=%s type=%s attempts=%d reason=%q/%s", c.ID, c.State, c.Priority, c.InstanceID, c.InstanceType, c.Attempts, c.Reason, c.ReasonCode)
	}
	return s
}

// eventsOf returns the events about target, a line each.
func (h *harness) eventsOf(target string) string {
	evs, _ := h.eng.Events(0, 1<<30)
	s := ""
	for _, e := range evs {
		if e.Target == target {
			s += fmt.Sprintf("\n  %s %s %s %s %q", e.Time.Format(time.TimeOnly), e.Actor, e.Kind, e.Action, e.Reason)
		}
	}
	return s
}

type specOpt func(*queue.Spec)

func prio(p int) specOpt { return func(s *queue.Spec) { s.Priority = &p } }
func ram(n int64) specOpt {
	return func(s *queue.Spec) { s.RuntimeConstraints.RAM = n }
}
func vcpus(n int) specOpt { return func(s *queue.Spec) { s.RuntimeConstraints.VCPUs = n } }
func maxAttempts(n int) specOpt {
	return func(s *queue.Spec) { s.MaxAttempts = n }
}

// submit adds a container that runs d of clock time and exits with code
// (d < 0: runs until killed).
func (h *harness) submit(d time.Duration, code int, opts ...specOpt) string {
	h.t.Helper()
	cmd := fake.Cmd(d, code)
	if d < 0 {
		cmd = []string{"run-forever"}
	}
	return h.submitCmd(cmd, opts...)
}

// submitCmd adds a container running cmd (1 vCPU, 512MiB unless opts say).
func (h *harness) submitCmd(cmd []string, opts ...specOpt) string {
	h.t.Helper()
	spec := queue.Spec{Command: cmd, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
	for _, o := range opts {
		o(&spec)
	}
	c, err := h.eng.Submit(spec, "test")
	if err != nil {
		h.t.Fatal(err)
	}
	return c.ID
}

func (h *harness) container(id string) view.Container {
	h.t.Helper()
	c, ok := h.eng.Container(id)
	if !ok {
		h.t.Fatalf("container %s not found", id)
	}
	return c
}

func (h *harness) state(id string) queue.State { return h.container(id).State }

func (h *harness) instance(id string) view.Instance {
	h.t.Helper()
	v, ok := h.eng.Instance(id)
	if !ok {
		h.t.Fatalf("instance %s not found", id)
	}
	return v
}

// live returns the instances the cloud still has.
func (h *harness) live() []cloud.InstanceID { return h.cloud.Live() }

// runnerList is what the runner of instance inst lists now, asked over
// the instance's executor as an operator's "runner list" would be; nil
// when it does not answer (a broken or destroyed instance).
func (h *harness) runnerList(inst string) []runner.Status {
	exec, err := h.cloud.ExecutorByID(cloud.InstanceID(inst))
	if err != nil {
		return nil
	}
	defer exec.Close()
	rc := runner.Client{Exec: exec, Path: h.cfg.Cloud.RunnerPath}
	sts, err := rc.List(context.Background())
	if err != nil {
		return nil
	}
	return sts
}

// runningOn waits for the container to be Running and returns its instance.
func (h *harness) runningOn(id string, max int) string {
	h.t.Helper()
	h.until(id+" running", max, func() bool {
		return h.state(id) == queue.Running && len(h.cloud.RunningOn(cloud.InstanceID(h.container(id).InstanceID))) > 0
	})
	return h.container(id).InstanceID
}

func (h *harness) checkPendingReasons() {
	h.t.Helper()
	cs, _ := h.eng.Containers(ListOptions{States: []queue.State{queue.Queued, queue.Locked}})
	for _, c := range cs {
		if c.ReasonCode == "" || c.Reason == "" {
			h.t.Errorf("container %s (%s) has no pending reason", c.ID, c.State)
		}
	}
}
