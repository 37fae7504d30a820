// Package enginetest runs a real Engine on the in-memory fake driver
// with a fake clock, for the tests of packages built on the engine (API,
// metrics, console backends). Each step is: pool work and one scheduler
// pass, wait for the cloud and runner calls it started, advance the clock
// one second — deterministic, with no sleeps.
package enginetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// GiB is 2³⁰ bytes.
const GiB = int64(1) << 30

// Start is the fake clock's starting time.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Config returns a configuration for tests: two types (small: 1 vCPU,
// 2 GiB, $1/h; large: 8 vCPU, 32 GiB, $4/h), a state dir in t.TempDir(),
// one-second probes and generous cloud rate limits.
func Config(t testing.TB) *config.Config {
	cfg := config.Default()
	cfg.Dispatcher.StateDir = t.TempDir()
	cfg.Cloud.Driver = "fake"
	cfg.InstanceTypes = []cloud.InstanceType{
		{Name: "small", ProviderType: "small", VCPUs: 1, RAM: 2 * GiB, Scratch: 10 * GiB, Price: 1.0},
		{Name: "large", ProviderType: "large", VCPUs: 8, RAM: 32 * GiB, Scratch: 100 * GiB, Price: 4.0},
	}
	cfg.Dispatcher.MaxInstances = 10
	cfg.Dispatcher.StaleLockTimeout = time.Minute
	cfg.Cloud.ProbeInterval = time.Second
	cfg.Cloud.SyncInterval = 5 * time.Second
	cfg.Cloud.TimeoutIdle = 10 * time.Minute
	cfg.Cloud.MaxCloudOpsPerSecond = 100
	cfg.Cloud.MaxProbesPerSecond = 100
	cfg.Cloud.MaxConcurrentCreates = 4
	cfg.Containers.KillGrace = 5 * time.Second
	return cfg
}

// Env is an Engine on the fake driver with a fake clock.
type Env struct {
	T      testing.TB
	Clock  *clock.Fake
	Cloud  *fake.Driver
	Engine *engine.Engine
	// Steps counts the steps taken so far.
	Steps  int
	closed bool
}

// New starts an Env; opts may set engine hooks (Config, InstanceSet,
// NewExecutor and Clock are filled in). The engine is closed at cleanup.
func New(t testing.TB, cfg *config.Config, ct fake.Options, opts engine.Options) *Env {
	t.Helper()
	clk := clock.NewFake(Start)
	ct.Clock = clk
	e := &Env{T: t, Clock: clk, Cloud: fake.New(ct)}
	opts.Config, opts.InstanceSet, opts.NewExecutor, opts.Clock = cfg, e.Cloud, e.Cloud.Executor, clk
	eng, err := engine.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.Engine = eng
	t.Cleanup(e.Close)
	return e
}

// Close closes the engine once.
func (e *Env) Close() {
	if !e.closed {
		e.closed = true
		e.Engine.Close()
	}
}

// Step runs n steps.
func (e *Env) Step(n int) {
	e.Steps += n
	for range n {
		e.Engine.Step()
		e.Engine.Settle()
		e.Clock.Advance(time.Second)
	}
}

// Until steps until cond holds, failing the test after max steps with
// the instances and containers it saw.
func (e *Env) Until(what string, max int, cond func() bool) {
	e.T.Helper()
	wait.With{Step: func() { e.Step(1) }, Seen: e.seen}.Steps(e.T, what, max, cond)
}

// seen describes the instances and the containers, for a failure.
func (e *Env) seen() string {
	var b strings.Builder
	for _, v := range e.Engine.Instances() {
		fmt.Fprintf(&b, "\n  instance %s %s containers=%v last_error=%q", v.ID, v.State, v.Containers, v.LastError)
	}
	cs, _ := e.Engine.Containers(engine.ListOptions{})
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  container %s %s inst=%s reason=%q", c.ID, c.State, c.InstanceID, c.Reason)
	}
	return b.String()
}

// Submit adds a container running cmd with 1 vCPU and 512 MiB unless spec
// says otherwise; it returns its id.
func (e *Env) Submit(spec queue.Spec) string {
	e.T.Helper()
	if spec.RuntimeConstraints.VCPUs == 0 {
		spec.RuntimeConstraints.VCPUs = 1
	}
	if spec.RuntimeConstraints.RAM == 0 {
		spec.RuntimeConstraints.RAM = GiB / 2
	}
	c, err := e.Engine.Submit(spec, "test")
	if err != nil {
		e.T.Fatal(err)
	}
	return c.ID
}

// Cmd is a command the in-memory runner runs for d of clock time before
// exiting 0; d < 0 runs until killed.
func Cmd(d time.Duration) []string {
	if d < 0 {
		return []string{"run-forever"}
	}
	return fake.Cmd(d, 0)
}

// Container returns a container, failing the test if it is unknown.
func (e *Env) Container(id string) view.Container {
	e.T.Helper()
	c, ok := e.Engine.Container(id)
	if !ok {
		e.T.Fatalf("container %s not found", id)
	}
	return c
}

// Instance returns an instance, failing the test if it is unknown.
func (e *Env) Instance(id string) view.Instance {
	e.T.Helper()
	v, ok := e.Engine.Instance(id)
	if !ok {
		e.T.Fatalf("instance %s not found", id)
	}
	return v
}
