package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

var (
	testBinary = []byte("dispatch-tui runner binary v1")
	testHash   = func() string { s := sha256.Sum256(testBinary); return hex.EncodeToString(s[:]) }()
	t0         = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
)

// testConfig is the built-in configuration with two types, max_instances
// 10 and cloud rate limits high enough not to get in the tests' way.
func testConfig() *config.Config {
	cfg := config.Default()
	cfg.Dispatcher.MaxInstances = 10
	cfg.Cloud.Driver = "fake"
	cfg.Cloud.MaxProbesPerSecond = 100
	cfg.Cloud.MaxCloudOpsPerSecond = 100
	cfg.Cloud.MaxConcurrentCreates = 10
	cfg.InstanceTypes = []cloud.InstanceType{
		{Name: "small", ProviderType: "s1", VCPUs: 1, RAM: 1 << 30, Price: 0.02},
		{Name: "large", ProviderType: "l1", VCPUs: 4, RAM: 8 << 30, Price: 0.08},
	}
	return cfg
}

// wrapSet wraps an InstanceSet to gate creates and destroys and to make
// destroys no-ops.
type wrapSet struct {
	cloud.InstanceSet
	gate          chan struct{} // non-nil: each Create waits for a value
	destroyGate   chan struct{} // non-nil: each Destroy waits for a value
	stickyDestroy atomic.Bool   // Destroy returns nil but does nothing
	destroys      atomic.Int32
	// reachDestroy: the instances say their Destroy must reach them, as
	// sshhosts hosts do (cloud.ReachDestroyer).
	reachDestroy atomic.Bool
	// tagsGate non-nil: each SetTags waits for a value.
	tagsGate chan struct{}
}

func (s *wrapSet) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	inst, err := s.InstanceSet.Create(ctx, it, tags)
	if err != nil {
		return nil, err
	}
	return &wrapInst{Instance: inst, s: s}, nil
}

func (s *wrapSet) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	l, err := s.InstanceSet.Instances(ctx, filter)
	for i := range l {
		l[i] = &wrapInst{Instance: l[i], s: s}
	}
	return l, err
}

type wrapInst struct {
	cloud.Instance
	s *wrapSet
}

func (i *wrapInst) DestroyNeedsReach() bool { return i.s.reachDestroy.Load() }

func (i *wrapInst) SetTags(ctx context.Context, tags cloud.Tags) error {
	if i.s.tagsGate != nil {
		select {
		case <-i.s.tagsGate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return i.Instance.SetTags(ctx, tags)
}

func (i *wrapInst) Destroy(ctx context.Context) error {
	if i.s.destroyGate != nil {
		select {
		case <-i.s.destroyGate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	i.s.destroys.Add(1)
	if i.s.stickyDestroy.Load() {
		return nil
	}
	return i.Instance.Destroy(ctx)
}

type harness struct {
	t    *testing.T
	clk  *clock.Fake
	drv  *fake.Driver
	set  *wrapSet
	cfg  *config.Config
	pool *Pool
	// trans sees every state change of the harness's pools and fails the
	// test on one states.txt does not list.
	trans *transitionRecorder

	mu     sync.Mutex
	events []Event
}

type hopt struct {
	cfg  func(*config.Config)
	drv  func(*fake.Options)
	pool func(*Options)
}

func newHarness(t *testing.T, o hopt) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewFake(t0), cfg: testConfig(), trans: newTransitionRecorder(t)}
	if o.cfg != nil {
		o.cfg(h.cfg)
	}
	dopts := fake.Options{Clock: h.clk, Seed: 1, BootDelay: 5 * time.Second}
	if o.drv != nil {
		o.drv(&dopts)
	}
	h.drv = fake.New(dopts)
	h.set = &wrapSet{InstanceSet: h.drv}
	h.pool = h.newPool(o.pool)
	return h
}

func (h *harness) newPool(mod func(*Options)) *Pool {
	h.t.Helper()
	opts := Options{
		Config:       h.cfg,
		InstanceSet:  h.set,
		NewExecutor:  h.drv.Executor,
		Clock:        h.clk,
		RunnerHash:   testHash,
		RunnerBinary: func() ([]byte, error) { return testBinary, nil },
		Owner:        "test",
		OnEvent: func(e Event) {
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		},
	}
	if mod != nil {
		mod(&opts)
	}
	p, err := New(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.trans.watch(p)
	checkChangesAtSettle(h.t, p)
	h.t.Cleanup(p.Stop)
	return p
}

// step runs one Step and waits for everything it started.
func (h *harness) step() {
	h.pool.Step()
	h.pool.Wait()
}

// run steps once a second for d.
func (h *harness) run(d time.Duration) {
	for end := h.clk.Now().Add(d); h.clk.Now().Before(end); h.clk.Advance(time.Second) {
		h.step()
	}
	h.step()
}

// until steps once a second until cond holds, failing after max.
func (h *harness) until(what string, max time.Duration, cond func() bool) {
	h.t.Helper()
	h.step()
	next := func() {
		h.clk.Advance(time.Second)
		h.step()
	}
	wait.With{Step: next, Seen: h.dump}.Steps(h.t, what+" within "+max.String(), int((max+time.Second-1)/time.Second), cond)
}

func (h *harness) dump() string {
	var b strings.Builder
	for _, v := range h.pool.Instances(nil) {
		fmt.Fprintf(&b, "\n  %q %s %s %s containers=%v err=%q", v.ID, v.Type, v.State, v.IdleBehavior, v.Containers, v.LastError)
	}
	return b.String()
}

func (h *harness) state(id cloud.InstanceID) State {
	v, ok := h.pool.Instance(id)
	if !ok {
		return ""
	}
	return v.State
}

func (h *harness) hasEvent(id cloud.InstanceID, kind, substr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.Instance == id && e.Kind == kind && strings.Contains(e.Message, substr) {
			return true
		}
	}
	return false
}

// createIdle creates an instance of typ and steps until it is idle.
func (h *harness) createIdle(typ string) cloud.InstanceID {
	h.t.Helper()
	if err := h.pool.Create(typ); err != nil {
		h.t.Fatalf("Create(%s): %v", typ, err)
	}
	h.pool.Wait()
	var id cloud.InstanceID
	for _, v := range h.pool.Instances(nil) {
		if v.ID != "" && v.State == StateBooting {
			id = v.ID
		}
	}
	if id == "" {
		h.t.Fatalf("no booting instance after create: %s", h.dump())
	}
	h.until(string(id)+" idle", 5*time.Minute, func() bool { return h.state(id) == StateIdle })
	return id
}

func spec(id string, cmd ...string) runner.Spec { return runner.Spec{ID: id, Command: cmd} }

func TestCreateBootIdle(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step() // first listing: nothing
	if !h.pool.Ready() {
		t.Fatal("not ready after an empty first listing")
	}
	if err := h.pool.Create("nope"); err == nil {
		t.Fatal("Create(unknown type) succeeded")
	}
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	views := h.pool.Instances(nil)
	if len(views) != 1 || views[0].ID == "" || views[0].State != StateBooting || views[0].Type != "small" || views[0].ProviderType != "s1" {
		t.Fatalf("after create: %s", h.dump())
	}
	id := views[0].ID
	inst, _ := h.drv.Instance(id)
	tags := inst.Tags()
	if tags[cloud.TagOwner] != "test" || tags[cloud.TagInstanceType] != "small" || tags[cloud.TagIdleBehavior] != "run" || len(tags[cloud.TagSecret]) != 32 {
		t.Fatalf("tags: %v", tags)
	}
	// Boot delay 5s: still booting for a few seconds, probed about every second.
	h.run(3 * time.Second)
	if st := h.state(id); st != StateBooting {
		t.Fatalf("state after 3s = %s", st)
	}
	h.until("idle", time.Minute, func() bool { return h.state(id) == StateIdle })
	if n := h.drv.Stats().Installs; n != 1 {
		t.Errorf("runner installs = %d, want 1", n)
	}
	v, _ := h.pool.Instance(id)
	if v.Reported == nil || len(v.Containers) != 0 || v.LastError != "" || v.LastProbe.IsZero() {
		t.Errorf("idle view: %+v", v)
	}
	if !h.hasEvent(id, EventCreate, "small") || !h.hasEvent(id, EventState, "booting -> idle") {
		t.Errorf("events: %+v", h.events)
	}
	st := h.pool.Stats()
	if st.CloudOps["create"][""] != 1 || st.CloudOps["list"][""] < 1 || st.Probes == 0 || st.RunnerDeploys != 1 {
		t.Errorf("stats: %+v", st)
	}

	// A container: running, then idle again once it exits.
	if err := h.pool.StartContainer(id, spec("c1", fake.Cmd(20*time.Second, 3)...)); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.pool.Instance(id); v.State != StateRunning || !slices.Equal(v.Containers, []string{"c1"}) || v.LastContainer != "c1" {
		t.Fatalf("after start: %+v", v)
	}
	h.pool.Wait()
	if n := h.drv.StartCount("c1"); n != 1 {
		t.Fatalf("start count %d", n)
	}
	h.until("c1 exited", time.Minute, func() bool { return h.state(id) == StateIdle })
	v, _ = h.pool.Instance(id)
	if len(v.Reported) != 1 || v.Reported[0].State != runner.StateExited || v.Reported[0].ExitCode != 3 {
		t.Fatalf("reported: %+v", v.Reported)
	}
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	if v, _ := h.pool.Instance(id); len(v.Reported) != 0 {
		t.Fatalf("reported after forget: %+v", v.Reported)
	}
}

func TestStartContainerErrors(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	if err := h.pool.StartContainer("nope", spec("c1", "true")); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown instance: %v", err)
	}
	if err := h.pool.StartContainer(id, spec("bad id!", "true")); err == nil {
		t.Errorf("invalid id accepted")
	}
	for _, b := range []IdleBehavior{IdleHold, IdleDrain} {
		if _, err := h.pool.SetIdleBehavior(id, b); err != nil {
			t.Fatal(err)
		}
		if err := h.pool.StartContainer(id, spec("c1", "true")); !errors.Is(err, ErrNotReady) {
			t.Errorf("%s: %v", b, err)
		}
		h.pool.SetIdleBehavior(id, IdleRun)
	}
	// A start on a broken instance fails and is reported.
	h.drv.Break(id)
	if err := h.pool.StartContainer(id, spec("c2", "sleep", "100")); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	f := h.pool.TakeStartFailures()
	if len(f) != 1 || f[0].ContainerID != "c2" || f[0].InstanceID != id || f[0].Err == nil || !f[0].NeverSent {
		t.Fatalf("start failures: %+v", f)
	}
	if f := h.pool.TakeStartFailures(); len(f) != 0 {
		t.Fatalf("not drained: %+v", f)
	}
	if v, _ := h.pool.Instance(id); v.State != StateIdle || len(v.Containers) != 0 {
		t.Fatalf("after failed start: %+v", v)
	}
}

func TestTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(h *harness) cloud.InstanceID
		before time.Duration // still alive after this long
		after  time.Duration // shut down by then (from the start)
		reason string
	}{
		{
			name: "boot timeout",
			setup: func(h *harness) cloud.InstanceID {
				h.drv.Configure(func(f *fake.Faults) { f.BootDelay = time.Hour })
				h.pool.Create("small")
				h.pool.Wait()
				return h.pool.Instances(nil)[0].ID
			},
			before: 9 * time.Minute, after: 11 * time.Minute, reason: "boot timeout",
		},
		{
			name:   "idle timeout",
			setup:  func(h *harness) cloud.InstanceID { return h.createIdle("small") },
			before: 50 * time.Second, after: 70 * time.Second, reason: "idle for",
		},
		{
			name: "probe timeout",
			setup: func(h *harness) cloud.InstanceID {
				id := h.createIdle("small")
				// Keep it busy so the idle timeout does not apply.
				h.pool.StartContainer(id, spec("c1", "sleep", "100000"))
				h.pool.Wait()
				h.drv.Break(id)
				return id
			},
			before: 9 * time.Minute, after: 11 * time.Minute, reason: "probe timeout",
		},
	} {
		for _, hold := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/hold=%v", tc.name, hold), func(t *testing.T) {
				h := newHarness(t, hopt{})
				h.step()
				id := tc.setup(h)
				if hold {
					if _, err := h.pool.SetIdleBehavior(id, IdleHold); err != nil {
						t.Fatal(err)
					}
				}
				h.run(tc.before)
				if st := h.state(id); st == StateShutdown || st == "" {
					t.Fatalf("shut down too early: %s", h.dump())
				}
				h.run(tc.after - tc.before)
				st := h.state(id)
				if hold {
					if st == StateShutdown || st == "" {
						t.Fatalf("held instance shut down: %s", h.dump())
					}
					if len(h.drv.Live()) != 1 {
						t.Fatalf("live: %v", h.drv.Live())
					}
					return
				}
				if st != StateShutdown && st != "" {
					t.Fatalf("not shut down: %s", h.dump())
				}
				if !h.hasEvent(id, EventShutdown, tc.reason) {
					t.Fatalf("no shutdown event with %q: %+v", tc.reason, h.events)
				}
				if len(h.drv.Live()) != 0 {
					t.Fatalf("still live at the provider: %v", h.drv.Live())
				}
				h.run(time.Minute) // listing removes it
				if _, ok := h.pool.Instance(id); ok {
					t.Fatalf("destroyed instance still in pool: %s", h.dump())
				}
				if h.hasEvent(id, EventDisappeared, "") {
					t.Fatalf("destroyed instance reported as disappeared")
				}
			})
		}
	}
}

func TestIdleTimeoutResetByWork(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	h.run(40 * time.Second) // idle 40s of the 60s timeout
	if err := h.pool.StartContainer(id, spec("c1", fake.Cmd(45*time.Second, 0)...)); err != nil {
		t.Fatal(err)
	}
	h.until("c1 running", 10*time.Second, func() bool { return h.state(id) == StateRunning })
	h.until("c1 done", 2*time.Minute, func() bool { return h.state(id) == StateIdle })
	// The probe that found it idle came at most one probe interval (10s)
	// after the last one that saw c1 running, which is when the idle time
	// counts from: the instance has at least 50s left, and at most 60s.
	h.run(40 * time.Second)
	if st := h.state(id); st != StateIdle {
		t.Fatalf("state %s 40s after c1 ended, want idle (idle timeout must count from the last busy time): %s", st, h.dump())
	}
	h.run(30 * time.Second)
	if st := h.state(id); st != StateShutdown && st != "" {
		t.Fatalf("state %s 70s after c1 ended, want shutdown", st)
	}
}

func TestDrain(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	idle := h.createIdle("small")
	busy := h.createIdle("small")
	if err := h.pool.StartContainer(busy, spec("c1", fake.Cmd(30*time.Second, 0)...)); err != nil {
		t.Fatal(err)
	}
	h.step()
	for _, id := range []cloud.InstanceID{idle, busy} {
		v, err := h.pool.SetIdleBehavior(id, IdleDrain)
		if err != nil || v.IdleBehavior != IdleDrain {
			t.Fatalf("SetIdleBehavior: %v %+v", err, v)
		}
	}
	h.step()
	if st := h.state(idle); st != StateShutdown {
		t.Fatalf("idle drained instance: %s", st)
	}
	if st := h.state(busy); st != StateRunning {
		t.Fatalf("busy drained instance: %s", st)
	}
	inst, _ := h.drv.Instance(busy)
	if b := inst.Tags()[cloud.TagIdleBehavior]; b != "drain" {
		t.Fatalf("tag %q", b)
	}
	h.run(25 * time.Second)
	if st := h.state(busy); st != StateRunning {
		t.Fatalf("busy drained instance before its container ended: %s", st)
	}
	h.until("busy drained", time.Minute, func() bool { return h.state(busy) == StateShutdown })
	if !h.hasEvent(busy, EventShutdown, "drained") || !h.hasEvent(busy, EventIdleBehavior, "run -> drain") {
		t.Fatalf("events: %+v", h.events)
	}
}

func TestShutdownAndKillInstance(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	a := h.createIdle("small")
	b := h.createIdle("small")
	h.pool.StartContainer(b, spec("c1", "sleep", "1000"))
	h.pool.Wait()
	if h.pool.Shutdown(b, "at quota") {
		t.Fatal("Shutdown of busy instance accepted")
	}
	if h.pool.Shutdown("nope", "x") {
		t.Fatal("Shutdown of unknown instance accepted")
	}
	h.pool.SetIdleBehavior(a, IdleHold)
	if h.pool.Shutdown(a, "x") {
		t.Fatal("Shutdown of held instance accepted")
	}
	h.pool.SetIdleBehavior(a, IdleRun)
	if !h.pool.Shutdown(a, "at quota") {
		t.Fatal("Shutdown of idle instance refused")
	}
	h.pool.SetIdleBehavior(b, IdleHold)
	v, err := h.pool.KillInstance(b, "operator")
	if err != nil || v.State != StateShutdown {
		t.Fatalf("KillInstance: %v %+v", err, v)
	}
	if _, err := h.pool.KillInstance("nope", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("KillInstance(unknown): %v", err)
	}
	h.pool.Wait()
	if live := h.drv.Live(); len(live) != 0 {
		t.Fatalf("live: %v", live)
	}
	h.run(time.Minute)
	if n := len(h.pool.Instances(nil)); n != 0 {
		t.Fatalf("instances: %s", h.dump())
	}
}

func TestQuota(t *testing.T) {
	h := newHarness(t, hopt{
		cfg:  func(c *config.Config) { c.Cloud.TimeoutIdle = time.Hour },
		drv:  func(o *fake.Options) { o.Quota = 2 },
		pool: func(o *Options) { o.QuotaProbeAfter = 5 * time.Minute },
	})
	h.step()
	if l, at := h.pool.Quota(); l != 10 || at {
		t.Fatalf("Quota() = %d %v", l, at)
	}
	for i := 0; i < 3; i++ {
		if err := h.pool.Create("small"); err != nil {
			t.Fatal(err)
		}
		h.pool.Wait()
	}
	if n := len(h.pool.Instances(nil)); n != 2 {
		t.Fatalf("instances: %s", h.dump())
	}
	if !h.hasEvent("", EventCloudError, "quota") {
		t.Fatalf("events: %+v", h.events)
	}
	if l, at := h.pool.Quota(); l != 2 || !at {
		t.Fatalf("Quota() = %d %v, want 2 true", l, at)
	}
	if err := h.pool.Create("small"); !errors.Is(err, ErrAtQuota) {
		t.Fatalf("Create at quota: %v", err)
	}
	h.run(4 * time.Minute)
	if err := h.pool.Create("large"); !errors.Is(err, ErrAtQuota) {
		t.Fatalf("Create before probe time: %v", err)
	}
	h.clk.Advance(time.Minute)
	// Probe one above: still refused by the provider, so still capped at 2.
	if l, at := h.pool.Quota(); l != 3 || at {
		t.Fatalf("Quota() at probe time = %d %v, want 3 false", l, at)
	}
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("probe create: %v", err)
	}
	if err := h.pool.Create("small"); !errors.Is(err, ErrAtQuota) {
		t.Fatalf("second probe create: %v", err)
	}
	h.pool.Wait()
	if l, at := h.pool.Quota(); l != 2 || !at {
		t.Fatalf("Quota() after failed probe = %d %v", l, at)
	}
	// The provider raises the quota: the next probe succeeds and the
	// estimate follows.
	h.drv.Configure(func(f *fake.Faults) { f.Quota = 3 })
	h.clk.Advance(5 * time.Minute)
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("probe create: %v", err)
	}
	h.pool.Wait()
	if l, at := h.pool.Quota(); l != 3 || !at {
		t.Fatalf("Quota() after successful probe = %d %v, want 3 true", l, at)
	}
	st := h.pool.Stats()
	if st.CloudOps["create"]["quota"] != 2 || st.CloudOps["create"][""] != 3 {
		t.Fatalf("create stats: %v", st.CloudOps["create"])
	}
}

// An instance shutting down still holds its quota at the provider: the
// pool neither creates past it nor lowers its estimate when a create made
// meanwhile fails.
func TestQuotaCountsInstancesShuttingDown(t *testing.T) {
	h := newHarness(t, hopt{
		cfg: func(c *config.Config) { c.Cloud.TimeoutIdle = time.Hour },
		drv: func(o *fake.Options) { o.Quota = 2 },
	})
	h.step()
	for range 3 {
		h.pool.Create("small")
		h.pool.Wait()
	}
	if l, at := h.pool.Quota(); l != 2 || !at {
		t.Fatalf("Quota() = %d %v, want 2 true", l, at)
	}
	ids := h.drv.Live()
	h.until("idle", time.Minute, func() bool { return h.state(ids[0]) == StateIdle })
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 1 }) // the destroy keeps failing: the instance stays
	if _, err := h.pool.KillInstance(ids[0], ""); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	if err := h.pool.Create("small"); !errors.Is(err, ErrAtQuota) {
		t.Fatalf("create while an instance is shutting down: %v, want ErrAtQuota", err)
	}
	h.pool.Wait()
	if l, at := h.pool.Quota(); l != 2 || !at {
		t.Fatalf("Quota() while shutting down = %d %v, want 2 true", l, at)
	}
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 0 })
	h.until("shut-down instance gone", 5*time.Minute, func() bool { return len(h.pool.Instances(nil)) == 1 })
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("create once it is gone: %v", err)
	}
}

func TestMaxInstances(t *testing.T) {
	h := newHarness(t, hopt{cfg: func(c *config.Config) { c.Dispatcher.MaxInstances = 2 }})
	h.step()
	h.pool.Create("small")
	h.pool.Create("small")
	if err := h.pool.Create("small"); !errors.Is(err, ErrAtQuota) {
		t.Fatalf("third create: %v", err)
	}
	h.pool.Wait()
	ids := h.drv.Live()
	// An instance shutting down counts until the provider accepts its
	// destroy: it still runs.
	h.until("idle", time.Minute, func() bool { return h.state(ids[0]) == StateIdle })
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 1 })
	h.pool.KillInstance(ids[0], "")
	h.pool.Wait()
	if err := h.pool.Create("small"); !errors.Is(err, ErrAtQuota) {
		t.Fatalf("create while the killed instance's destroy fails: %v", err)
	}
	if n := len(h.drv.Live()); n != 2 {
		t.Fatalf("%d instances live, want 2", n)
	}
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 0 })
	h.until("destroy accepted", time.Minute, func() bool { return len(h.drv.Live()) == 1 })
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("create after the destroy: %v", err)
	}
}

// A destroy that succeeds after the listing already dropped its instance
// (it vanished meanwhile) must not free a slot twice.
func TestMaxInstancesDestroyEndingAfterTheInstanceLeft(t *testing.T) {
	h := newHarness(t, hopt{cfg: func(c *config.Config) {
		c.Dispatcher.MaxInstances = 2
		c.Cloud.TimeoutIdle = time.Hour
	}})
	h.step()
	h.pool.Create("small")
	h.pool.Create("small")
	h.pool.Wait()
	ids := h.drv.Live()
	h.until("idle", time.Minute, func() bool { return h.state(ids[0]) == StateIdle && h.state(ids[1]) == StateIdle })
	h.set.destroyGate = make(chan struct{})
	h.pool.KillInstance(ids[0], "") // its destroy waits at the gate
	h.drv.Vanish(ids[0])
	h.clk.Advance(h.cfg.Cloud.SyncInterval)
	h.pool.Step() // a listing without it
	wait.With{Seen: h.dump}.Until(t, "the listing to drop the vanished instance", 10*time.Second, func() bool { return len(h.pool.Instances(nil)) == 1 })
	close(h.set.destroyGate) // now the destroy succeeds
	h.pool.Wait()
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("create with 1 of 2 instances: %v", err)
	}
	if err := h.pool.Create("small"); !errors.Is(err, ErrAtQuota) {
		t.Fatalf("third instance at max_instances 2: %v", err)
	}
}

func TestCapacity(t *testing.T) {
	for _, providerWide := range []bool{false, true} {
		t.Run(fmt.Sprintf("provider=%v", providerWide), func(t *testing.T) {
			h := newHarness(t, hopt{pool: func(o *Options) { o.CapacityBackoff = 2 * time.Minute }})
			h.step()
			if providerWide {
				h.drv.Configure(func(f *fake.Faults) { f.ProviderCapacityError = true })
			} else {
				h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes["s1"] = true })
			}
			if err := h.pool.Create("small"); err != nil {
				t.Fatal(err)
			}
			h.pool.Wait()
			if n := len(h.pool.Instances(nil)); n != 0 {
				t.Fatalf("instances: %s", h.dump())
			}
			var cb *CapacityBlockedError
			if err := h.pool.Create("small"); !errors.As(err, &cb) || cb.Until != t0.Add(2*time.Minute) {
				t.Fatalf("Create(small) during back-off: %v", err)
			}
			wantType := "small"
			if providerWide {
				wantType = ""
			}
			if cb.Type != wantType {
				t.Fatalf("blocked type %q, want %q", cb.Type, wantType)
			}
			err := h.pool.Create("large")
			if providerWide {
				if !errors.As(err, &cb) {
					t.Fatalf("Create(large) during provider back-off: %v", err)
				}
			} else if err != nil {
				t.Fatalf("Create(large) other type: %v", err)
			}
			h.pool.Wait()
			h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes["s1"] = false })
			h.drv.Configure(func(f *fake.Faults) { f.ProviderCapacityError = false })
			h.run(time.Minute + 50*time.Second)
			if err := h.pool.Create("small"); !errors.As(err, &cb) {
				t.Fatalf("Create(small) before back-off ends: %v", err)
			}
			h.run(10 * time.Second)
			if err := h.pool.Create("small"); err != nil {
				t.Fatalf("Create(small) after back-off: %v", err)
			}
			h.pool.Wait()
			if h.pool.Stats().CloudOps["create"]["capacity"] != 1 {
				t.Fatalf("stats: %v", h.pool.Stats().CloudOps)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	a := h.createIdle("small")
	b := h.createIdle("small")
	h.pool.StartContainer(b, spec("c1", "sleep", "100000"))
	h.pool.Wait()
	until := h.clk.Now().Add(3 * time.Minute)
	h.drv.Configure(func(f *fake.Faults) { f.RateLimitedUntil = until })
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	if !h.hasEvent("", EventCloudError, "rate_limit") {
		t.Fatalf("events: %+v", h.events)
	}
	if err := h.pool.Create("small"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("Create while paused: %v", err)
	}
	before := h.drv.Stats()
	// Cloud calls of every kind wait: destroy, set tags, list.
	h.pool.SetIdleBehavior(b, IdleHold)
	h.pool.KillInstance(a, "test")
	h.run(2*time.Minute + 50*time.Second) // includes a sync interval
	after := h.drv.Stats()
	if after.Destroys != before.Destroys || after.SetTags != before.SetTags || after.Lists != before.Lists || after.Creates != before.Creates {
		t.Fatalf("cloud calls during pause: before %+v after %+v", before, after)
	}
	if h.pool.Stats().PausedUntil != until {
		t.Fatalf("paused until %v, want %v", h.pool.Stats().PausedUntil, until)
	}
	// Probes (not cloud calls) go on.
	if v, _ := h.pool.Instance(b); h.clk.Now().Sub(v.LastProbe) > 10*time.Second {
		t.Fatalf("probes stopped during pause: %+v", v)
	}
	h.run(15 * time.Second)
	after = h.drv.Stats()
	if after.Destroys == before.Destroys || after.SetTags == before.SetTags || after.Lists == before.Lists {
		t.Fatalf("cloud calls not resumed: %+v", after)
	}
	if live := h.drv.Live(); !slices.Equal(live, []cloud.InstanceID{b}) {
		t.Fatalf("live: %v", live)
	}
	inst, _ := h.drv.Instance(b)
	if inst.Tags()[cloud.TagIdleBehavior] != "hold" {
		t.Fatalf("tags: %v", inst.Tags())
	}
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("Create after pause: %v", err)
	}
}

func TestMaxConcurrentCreatesAndCloudOpRate(t *testing.T) {
	h := newHarness(t, hopt{cfg: func(c *config.Config) {
		c.Cloud.MaxConcurrentCreates = 2
		c.Cloud.MaxCloudOpsPerSecond = 3
	}})
	h.set.gate = make(chan struct{})
	h.pool.Step() // the listing (1 cloud op)
	h.pool.Wait()
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	if err := h.pool.Create("small"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("third concurrent create: %v", err)
	}
	views := h.pool.Instances(nil)
	if len(views) != 2 || views[0].ID != "" || views[1].State != StateBooting {
		t.Fatalf("pending creates: %+v", views)
	}
	if l, at := h.pool.Quota(); l != 10 || at {
		t.Fatalf("quota %d %v", l, at)
	}
	h.set.gate <- struct{}{}
	h.set.gate <- struct{}{}
	h.pool.Wait()
	// Three tokens spent this second (list + 2 creates): throttled by rate.
	if err := h.pool.Create("small"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("create with an empty token bucket: %v", err)
	}
	h.clk.Advance(time.Second)
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("create after refill: %v", err)
	}
	h.set.gate <- struct{}{}
	h.pool.Wait()
	if n := len(h.drv.Live()); n != 3 {
		t.Fatalf("live %d", n)
	}
}

func TestDisappearance(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	h.pool.StartContainer(id, spec("c1", "sleep", "1000"))
	h.pool.Wait()
	h.drv.Vanish(id)
	h.until("removed", 2*time.Minute, func() bool { _, ok := h.pool.Instance(id); return !ok })
	if !h.hasEvent(id, EventDisappeared, "running") {
		t.Fatalf("events: %+v", h.events)
	}
}

func TestListedInstancesAdoptedAndIgnored(t *testing.T) {
	h := newHarness(t, hopt{})
	ctx := context.Background()
	small := h.drv
	// One of ours with tags, one of ours with an unknown type tag but a
	// known provider type, one we cannot type, and one of someone else's.
	mk := func(it cloud.InstanceType, tags cloud.Tags) cloud.InstanceID {
		inst, err := small.Create(ctx, it, tags)
		if err != nil {
			t.Fatal(err)
		}
		return inst.ID()
	}
	a := mk(cloud.InstanceType{Name: "large", ProviderType: "l1"}, cloud.Tags{cloud.TagOwner: "test", cloud.TagInstanceType: "large", cloud.TagIdleBehavior: "drain"})
	b := mk(cloud.InstanceType{Name: "x", ProviderType: "s1"}, cloud.Tags{cloud.TagOwner: "test", cloud.TagInstanceType: "gone"})
	c := mk(cloud.InstanceType{Name: "x", ProviderType: "zz"}, cloud.Tags{cloud.TagOwner: "test"})
	d := mk(cloud.InstanceType{Name: "small", ProviderType: "s1"}, cloud.Tags{cloud.TagOwner: "other"})
	h.pool.Step()
	if h.pool.Ready() {
		// The listing is in flight or done; instances not probed yet.
		h.pool.mu.Lock()
		n := len(h.pool.list)
		h.pool.mu.Unlock()
		if n > 0 {
			t.Fatal("ready before probing listed instances")
		}
	}
	h.pool.Wait()
	va, oka := h.pool.Instance(a)
	vb, okb := h.pool.Instance(b)
	_, okc := h.pool.Instance(c)
	_, okd := h.pool.Instance(d)
	if !oka || va.Type != "large" || va.IdleBehavior != IdleDrain || va.State != StateUnknown {
		t.Fatalf("a: %v %+v", oka, va)
	}
	if !okb || vb.Type != "small" || vb.IdleBehavior != IdleRun {
		t.Fatalf("b: %v %+v", okb, vb)
	}
	if okc || okd {
		t.Fatalf("c, d adopted: %s", h.dump())
	}
	if f := h.pool.ForeignInstances(); len(f) != 1 || f[0].ID != d || f[0].State != StateForeign || f[0].LastError != "owned by other" {
		t.Fatalf("foreign rows %+v, want %s owned by other", f, d)
	}
	for name, verb := range map[string]func() error{
		"kill": func() error { _, err := h.pool.KillInstance(d, ""); return err },
		"hold": func() error { _, err := h.pool.SetIdleBehavior(d, IdleHold); return err },
	} {
		if err := verb(); err == nil || err.Error() != "instance "+string(d)+" belongs to dispatcher other; not touched" {
			t.Fatalf("%s on another dispatcher's instance: %v", name, err)
		}
	}
	if h.pool.Ready() {
		t.Fatal("ready before probes")
	}
	h.clk.Advance(10 * time.Second) // past the boot delay
	h.step()
	if !h.pool.Ready() {
		t.Fatalf("not ready after probes: %s", h.dump())
	}
	h.step()
	if st := h.state(a); st != StateShutdown {
		t.Fatalf("drained adopted idle instance: %s", st)
	}
	if st := h.state(b); st != StateIdle {
		t.Fatalf("b: %s", st)
	}
}

func TestRestartRestoresTagsAndContainers(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	held := h.createIdle("small")
	busy := h.createIdle("large")
	h.pool.StartContainer(busy, spec("c1", "sleep", "1000"))
	h.pool.StartContainer(held, spec("c2", "true"))
	h.pool.Wait()
	h.pool.SetIdleBehavior(held, IdleHold)
	h.pool.Wait()
	h.pool.Stop()
	if h.drv.StartCount("c1") != 1 {
		t.Fatal("c1 not started")
	}

	h.clk.Advance(time.Minute)
	h.pool = h.newPool(nil)
	h.step() // listing
	if h.pool.Ready() {
		t.Fatal("ready before probing")
	}
	h.step() // probes
	if !h.pool.Ready() {
		t.Fatalf("not ready: %s", h.dump())
	}
	vh, _ := h.pool.Instance(held)
	vb, _ := h.pool.Instance(busy)
	if vh.IdleBehavior != IdleHold || vh.Type != "small" || vh.State != StateIdle {
		t.Fatalf("held: %+v", vh)
	}
	if len(vh.Reported) != 1 || vh.Reported[0].ID != "c2" || vh.Reported[0].State != runner.StateExited {
		t.Fatalf("held reported: %+v", vh.Reported)
	}
	if vb.State != StateRunning || vb.Type != "large" || !slices.Equal(vb.Containers, []string{"c1"}) ||
		len(vb.Reported) != 1 || vb.Reported[0].State != runner.StateRunning {
		t.Fatalf("busy: %+v", vb)
	}
	if n := h.drv.Stats().Installs; n != 2 {
		t.Fatalf("runner reinstalled: %d installs", n)
	}
}

func TestDestroyRepeatedWhileListed(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	h.set.stickyDestroy.Store(true)
	h.pool.KillInstance(id, "test")
	h.pool.Wait()
	if n := h.set.destroys.Load(); n != 1 {
		t.Fatalf("destroys %d", n)
	}
	h.run(9 * time.Second)
	if n := h.set.destroys.Load(); n != 1 {
		t.Fatalf("destroyed again before timeout_shutdown: %d", n)
	}
	h.run(2 * time.Second)
	if n := h.set.destroys.Load(); n != 2 {
		t.Fatalf("destroys after timeout_shutdown %d, want 2", n)
	}
	h.set.stickyDestroy.Store(false)
	h.run(15 * time.Second)
	if n := h.set.destroys.Load(); n != 3 {
		t.Fatalf("destroys %d, want 3", n)
	}
	h.run(15 * time.Second)
	if _, ok := h.pool.Instance(id); ok || len(h.drv.Live()) != 0 {
		t.Fatalf("not gone: %s", h.dump())
	}
	if n := h.set.destroys.Load(); n != 3 {
		t.Fatalf("destroys %d, want 3", n)
	}
}

func TestDestroyErrorRetried(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 1 })
	h.pool.KillInstance(id, "test")
	h.run(7 * time.Second) // retries back off: after 1s, 2s, 3s...
	if n := h.drv.Stats().DestroyErrors; n < 3 || n > 5 {
		t.Fatalf("destroy errors %d in 7s, want a few retries with back-off", n)
	}
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 0 })
	h.run(12 * time.Second)
	if len(h.drv.Live()) != 0 {
		t.Fatal("not destroyed")
	}
	if h.pool.Stats().CloudOps["destroy"]["other"] < 3 {
		t.Fatalf("stats %v", h.pool.Stats().CloudOps)
	}
}

func TestKillContainer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cmd      []string
		wantCode int
		wantKill bool
	}{
		{"term", []string{"sleep", "1000"}, fake.ExitTerm, false},
		{"kill after grace", []string{"sleep-forever", fake.IgnoreTerm}, fake.ExitKill, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, hopt{cfg: func(c *config.Config) { c.Cloud.TimeoutIdle = time.Hour }})
			h.step()
			id := h.createIdle("small")
			h.pool.StartContainer(id, spec("c1", tc.cmd...))
			h.run(10 * time.Second)
			h.pool.KillContainer(id, "c1")
			h.pool.KillContainer(id, "c1")
			h.pool.Wait()
			if n := h.drv.Stats().Kills; n != 1 {
				t.Fatalf("kills after TERM: %d", n)
			}
			h.run(25 * time.Second)
			h.pool.KillContainer(id, "c1")
			h.pool.Wait()
			if n := h.drv.Stats().Kills; n != 1 {
				t.Fatalf("kills before grace: %d", n)
			}
			h.run(20 * time.Second)
			wantKills := 1
			if tc.wantKill {
				wantKills = 2
			}
			if n := h.drv.Stats().Kills; n != wantKills {
				t.Fatalf("kills: %d, want %d", n, wantKills)
			}
			h.run(20 * time.Second)
			v, _ := h.pool.Instance(id)
			if v.State != StateIdle || len(v.Reported) != 1 || v.Reported[0].ExitCode != tc.wantCode {
				t.Fatalf("after kill: %+v", v)
			}
			if n := h.drv.Stats().Kills; n != wantKills {
				t.Fatalf("kills: %d, want %d", n, wantKills)
			}
		})
	}
}

func TestContainersIncludeStartsAfterList(t *testing.T) {
	// A start completed after the list was issued stays in Containers even
	// though that list does not show it; a container the runner lost is
	// dropped by the next list.
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	h.pool.mu.Lock()
	w := h.pool.byID[id]
	listSeq := h.pool.nextSeqLocked()
	h.pool.mu.Unlock()
	h.pool.StartContainer(id, spec("c1", "sleep", "1000"))
	h.pool.Wait()
	h.pool.mu.Lock()
	h.pool.applyListLocked(w, nil, listSeq, h.clk.Now(), h.clk.Now())
	cs := slices.Clone(w.v.Containers)
	h.pool.mu.Unlock()
	if !slices.Equal(cs, []string{"c1"}) {
		t.Fatalf("containers after stale list: %v", cs)
	}
	h.run(10 * time.Second)
	if v, _ := h.pool.Instance(id); !slices.Equal(v.Containers, []string{"c1"}) || v.State != StateRunning {
		t.Fatalf("%+v", v)
	}
	h.drv.CrashRunner(id)
	h.run(10 * time.Second)
	if v, _ := h.pool.Instance(id); len(v.Containers) != 0 || v.State != StateIdle {
		t.Fatalf("after runner crash: %+v", v)
	}
}

func TestChangedAndEventsWithoutLock(t *testing.T) {
	h := newHarness(t, hopt{cfg: func(c *config.Config) { c.Cloud.TimeoutIdle = time.Hour }})
	// OnEvent may call back into the pool.
	h.pool.opts.OnEvent = func(e Event) {
		h.pool.Instances(nil)
		h.pool.Quota()
		h.mu.Lock()
		h.events = append(h.events, e)
		h.mu.Unlock()
	}
	h.step()
	select {
	case <-h.pool.Changed():
	default:
		t.Fatal("no change notification after first listing")
	}
	id := h.createIdle("small")
	select {
	case <-h.pool.Changed():
	default:
		t.Fatal("no change notification")
	}
	if !h.hasEvent(id, EventCreate, "") {
		t.Fatal("no create event")
	}
	// Probes that find nothing new do not signal.
	h.run(30 * time.Second)
	select {
	case <-h.pool.Changed():
	default:
	}
	probes := h.pool.Stats().Probes
	h.run(30 * time.Second)
	select {
	case <-h.pool.Changed():
		t.Fatal("change notification without a change")
	default:
	}
	if h.pool.Stats().Probes <= probes {
		t.Fatal("no probes")
	}
	h.pool.StartContainer(id, spec("c1", "sleep", "5"))
	select {
	case <-h.pool.Changed():
	default:
		t.Fatal("no change notification after a start")
	}
	h.run(15 * time.Second)
	select {
	case <-h.pool.Changed():
	default:
		t.Fatal("no change notification after the container exited")
	}
}

func TestStopCancels(t *testing.T) {
	h := newHarness(t, hopt{})
	h.set.gate = make(chan struct{}) // never opened: create blocks until ctx is canceled
	h.step()
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Stop()
	if err := h.pool.Create("small"); err == nil {
		t.Fatal("Create after Stop succeeded")
	}
	h.pool.Step() // no-op
	h.pool.Wait()
}

// TestProbeRateLimit: the first probes of what a restart's (or a
// takeover's) first listing found are all made at once, for nothing starts
// until they are (Ready); the probes after them keep to
// max_probes_per_second.
func TestProbeRateLimit(t *testing.T) {
	h := newHarness(t, hopt{cfg: func(c *config.Config) {
		c.Cloud.MaxProbesPerSecond = 2
		c.Dispatcher.MaxInstances = 100
	}})
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		h.drv.Create(ctx, cloud.InstanceType{Name: "small", ProviderType: "s1"}, cloud.Tags{cloud.TagOwner: "test", cloud.TagInstanceType: "small"})
	}
	h.clk.Advance(10 * time.Second)
	h.step() // listing
	h.step()
	if n := h.pool.Stats().Probes; n != 10 {
		t.Fatalf("%d probes in the step after the first listing, want all 10 (not held by max_probes_per_second)", n)
	}
	if !h.pool.Ready() {
		t.Fatalf("not ready once every listed instance was probed: %s", h.dump())
	}
	// The next round, due for all ten at once, keeps to the rate.
	h.clk.Advance(h.cfg.Cloud.ProbeInterval)
	h.step()
	if n := h.pool.Stats().Probes; n != 12 {
		t.Fatalf("%d probes after the next round's first step, want 12 (two a second)", n)
	}
	for i := 0; i < 4; i++ {
		h.clk.Advance(time.Second)
		h.step()
	}
	if n := h.pool.Stats().Probes; n != 20 {
		t.Fatalf("%d probes four seconds into the next round, want 20", n)
	}
}

// bigPool lists n idle instances with one container each.
func bigPool(tb testing.TB, n int) *harness {
	t, _ := tb.(*testing.T)
	h := &harness{t: t, clk: clock.NewFake(t0), cfg: testConfig(), trans: newTransitionRecorder(tb)}
	h.cfg.Dispatcher.MaxInstances = n
	h.cfg.Cloud.MaxProbesPerSecond = 0
	h.drv = fake.New(fake.Options{Clock: h.clk})
	h.set = &wrapSet{InstanceSet: h.drv}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		inst, err := h.drv.Create(ctx, cloud.InstanceType{Name: "small", ProviderType: "s1"}, cloud.Tags{cloud.TagOwner: "test", cloud.TagInstanceType: "small"})
		if err != nil {
			tb.Fatal(err)
		}
		ex, _ := h.drv.Executor(inst)
		body := fmt.Sprintf(`{"id":"c%d","command":["sleep","100000"]}`, i)
		if _, _, err := ex.Execute(ctx, runner.Command{Verb: "start", ID: fmt.Sprintf("c%d", i)}.Line("/x"), []byte(body)); err != nil {
			tb.Fatal(err)
		}
	}
	p, err := New(Options{Config: h.cfg, InstanceSet: h.set, NewExecutor: h.drv.Executor, Clock: h.clk, Owner: "test"})
	if err != nil {
		tb.Fatal(err)
	}
	h.pool = p
	h.trans.watch(p)
	tb.Cleanup(p.Stop)
	p.Step()
	p.Wait()
	p.Step()
	p.Wait()
	if !p.Ready() {
		tb.Fatal("not ready")
	}
	return h
}

func TestAllocations(t *testing.T) {
	h := bigPool(t, 1000)
	buf := h.pool.Instances(nil)
	if len(buf) != 1000 || buf[0].State != StateRunning || len(buf[0].Containers) != 1 {
		t.Fatalf("instances: %d %+v", len(buf), buf[0])
	}
	if a := testing.AllocsPerRun(20, func() { buf = h.pool.Instances(buf) }); a > 4 {
		t.Errorf("Instances: %v allocations", a)
	}
	// Copies are deep.
	buf[0].Containers[0] = "changed"
	buf[0].Reported[0].ID = "changed"
	if v := h.pool.Instances(nil)[0]; v.Containers[0] == "changed" || v.Reported[0].ID == "changed" {
		t.Error("Instances shares slices with the pool")
	}
	h.clk.Advance(time.Second) // nothing due: probes at +10s, listing at +1m
	if a := testing.AllocsPerRun(20, h.pool.Step); a > 0 {
		t.Errorf("idle Step: %v allocations", a)
	}
}

func BenchmarkInstances1000(b *testing.B) {
	h := bigPool(b, 1000)
	buf := h.pool.Instances(nil)
	b.ReportAllocs()
	for b.Loop() {
		buf = h.pool.Instances(buf)
	}
}

func BenchmarkIdleStep1000(b *testing.B) {
	h := bigPool(b, 1000)
	h.clk.Advance(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		h.pool.Step()
	}
}

func TestListingErrorRetried(t *testing.T) {
	h := newHarness(t, hopt{})
	h.drv.Configure(func(f *fake.Faults) { f.RateLimitRate = 1 })
	h.step()
	if h.pool.Ready() {
		t.Fatal("ready after a failed first listing")
	}
	if !h.hasEvent("", EventCloudError, "list instances") {
		t.Fatalf("events: %+v", h.events)
	}
	h.drv.Configure(func(f *fake.Faults) { f.RateLimitRate = 0 })
	h.drv.Configure(func(f *fake.Faults) { f.RateLimitedUntil = time.Time{} })
	h.until("ready", time.Minute, h.pool.Ready)
	if n := h.pool.Stats().CloudOps["list"]["rate_limit"]; n != 1 {
		t.Fatalf("list stats: %v", h.pool.Stats().CloudOps["list"])
	}
}

// TestSoak runs the pool against every fault the driver injects, with a
// toy scheduler, and checks that nothing leaks once the work stops.
func TestSoak(t *testing.T) {
	h := newHarness(t, hopt{
		cfg: func(c *config.Config) {
			c.Dispatcher.MaxInstances = 8
			c.Cloud.TimeoutBooting = 2 * time.Minute
			c.Cloud.TimeoutProbe = time.Minute
			c.Cloud.MaxCloudOpsPerSecond = 5
		},
		drv: func(o *fake.Options) {
			o.Seed = 42
			o.Quota = 6
			o.BootDelay = 3 * time.Second
			o.CreateErrorRate = 0.2
			o.DestroyErrorRate = 0.2
			o.RateLimitRate = 0.03
			o.RateLimitFor = 5 * time.Second
			o.VanishRate = 0.005
			o.BrokenRate = 0.1
			o.RunnerCrashRate = 0.1
		},
		pool: func(o *Options) {
			o.QuotaProbeAfter = 20 * time.Second
			o.CapacityBackoff = 20 * time.Second
		},
	})
	next := 0
	var buf []InstanceView
	for i := 0; i < 900; i++ {
		if i < 400 {
			typ := []string{"small", "large"}[i%2]
			if i%50 == 10 {
				h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes["s1"] = true })
			} else if i%50 == 30 {
				h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes["s1"] = false })
			}
			h.pool.Create(typ)
		}
		buf = h.pool.Instances(buf)
		if limit, _ := h.pool.Quota(); limit < 0 {
			t.Fatal("negative limit")
		}
		live := 0
		for _, v := range buf {
			if v.State != StateShutdown {
				live++
			}
			for _, st := range v.Reported {
				if st.State == runner.StateExited {
					h.pool.ForgetContainer(v.ID, st.ID)
				}
			}
			if i < 400 && v.State == StateIdle && v.IdleBehavior == IdleRun {
				next++
				cmd := fake.Cmd(time.Duration(next%30)*time.Second, 0)
				if next%7 == 0 {
					cmd = []string{"sleep-forever"}
				}
				if err := h.pool.StartContainer(v.ID, spec(fmt.Sprintf("c%d", next), cmd...)); err != nil {
					t.Fatalf("start on idle instance: %v", err)
				}
			}
			if i%13 == 0 {
				for _, c := range v.Containers {
					h.pool.KillContainer(v.ID, c)
				}
			}
		}
		if live > 8 {
			t.Fatalf("%d instances above max_instances", live)
		}
		h.pool.TakeStartFailures()
		h.step()
		h.clk.Advance(time.Second)
	}
	if live := h.drv.Live(); len(live) != 0 {
		t.Fatalf("leaked instances %v; pool: %s", live, h.dump())
	}
	h.run(2 * time.Minute)
	if n := len(h.pool.Instances(nil)); n != 0 {
		t.Fatalf("pool not empty: %s", h.dump())
	}
	st := h.pool.Stats()
	t.Logf("stats: %+v; driver: %+v", st, h.drv.Stats())
	if st.CloudOps["create"][""] < 5 {
		t.Fatalf("too few creates: %v", st.CloudOps)
	}
}

// Installs in flight share one copy of the runner binary; it is read again
// only after the last of them is done.
func TestRunnerBinarySharedWhileInstallsRun(t *testing.T) {
	reads := 0
	p := &Pool{opts: Options{RunnerBinary: func() ([]byte, error) {
		reads++
		return []byte("runner"), nil
	}}}
	a, _ := p.acquireRunnerBinary()
	b, _ := p.acquireRunnerBinary()
	if reads != 1 || &a[0] != &b[0] {
		t.Fatalf("two installs in flight: %d reads, shared %v", reads, &a[0] == &b[0])
	}
	p.releaseRunnerBinary()
	p.releaseRunnerBinary()
	if p.bin != nil {
		t.Fatal("binary kept after the last install")
	}
	p.acquireRunnerBinary()
	p.releaseRunnerBinary()
	if reads != 2 {
		t.Fatalf("reads %d, want 2", reads)
	}
}

// New checks its own tunables; the config it trusts, the checks of config
// keys being engine/config's alone.
func TestNewChecksItsOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*config.Config, *Options)
		want string // "" = accepted
	}{
		{"defaults", func(*config.Config, *Options) {}, ""},
		{"zero timeout_idle and kill_grace", func(c *config.Config, _ *Options) {
			c.Cloud.TimeoutIdle, c.Containers.KillGrace = 0, 0
		}, ""},
		{"negative QuotaProbeAfter", func(_ *config.Config, o *Options) { o.QuotaProbeAfter = -time.Second }, "QuotaProbeAfter is negative"},
		{"negative CapacityBackoff", func(_ *config.Config, o *Options) { o.CapacityBackoff = -time.Second }, "CapacityBackoff is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			drv := fake.New(fake.Options{Clock: clock.NewFake(t0)})
			opts := Options{Config: cfg, InstanceSet: drv, NewExecutor: drv.Executor, Clock: clock.NewFake(t0)}
			tc.mod(cfg, &opts)
			p, err := New(opts)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				p.Stop()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkForgetAskedAgain is the scheduler asking to forget an
// instance's 1,024 exited containers while their forgets are still in
// flight, as every pass does until they are done: an op is one pass's
// asks.
func BenchmarkForgetAskedAgain(b *testing.B) {
	const n = 1024
	h := bigPool(b, 1)
	id := h.pool.Instances(nil)[0].ID
	insts, err := h.drv.Instances(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	ex, _ := h.drv.Executor(insts[0])
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("done-%d", i)
		body, _ := json.Marshal(runner.Spec{ID: ids[i], Command: fake.Cmd(0, 0)})
		if _, _, err := ex.Execute(context.Background(), runner.Command{Verb: "start", ID: ids[i]}.Line("/x"), body); err != nil {
			b.Fatal(err)
		}
	}
	// The first batch's output is never stored while the benchmark runs:
	// every forget stays queued or in flight.
	stored := make(chan struct{}, n)
	release := make(chan struct{})
	h.pool.opts.OnLogsBatch = oneByOne(func(string, []byte) error { stored <- struct{}{}; <-release; return nil })
	b.Cleanup(func() { close(release) })
	for _, c := range ids {
		h.pool.ForgetContainer(id, c)
	}
	<-stored
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range ids {
			h.pool.ForgetContainer(id, c)
		}
	}
}
