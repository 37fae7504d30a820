package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

// missingRunnerExec answers every runner command as a shell does for a
// runner_path it cannot find, while missing is set.
type missingRunnerExec struct {
	runner.Executor
	missing *atomic.Bool
}

func (e *missingRunnerExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	if e.missing.Load() && strings.Contains(cmd, " runner ") {
		msg := "sh: 1: dispatch-tui-runner: not found"
		return nil, []byte(msg), &runner.ExitError{Code: 127, Stderr: msg}
	}
	return e.Executor.Execute(ctx, cmd, stdin)
}

// TestBadRunnerPathGivesClearPendingReason: with a runner that cannot be
// run, a waiting container says its type fails to boot, and why, within
// one timeout_booting (not "waiting for an instance to boot" for ever);
// once the runner is fixed, a retry boots and runs it.
func TestBadRunnerPathGivesClearPendingReason(t *testing.T) {
	cfg := testConfig(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var missing atomic.Bool
	missing.Store(true)
	drv := fake.New(fake.Options{Clock: clk, BootDelay: 5 * time.Second})
	h := &harness{t: t, clk: clk, cloud: drv, cfg: cfg}
	eng, err := New(Options{Config: cfg, InstanceSet: drv, Clock: clk,
		NewExecutor: func(inst cloud.Instance) (runner.Executor, error) {
			e, err := drv.Executor(inst)
			if err != nil {
				return nil, err
			}
			return &missingRunnerExec{Executor: e, missing: &missing}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	t.Cleanup(func() { eng.Close() })

	id := h.submit(time.Minute, 0)
	steps := int(cfg.Cloud.TimeoutBooting / time.Second)
	h.until("pending BOOT_FAILING", steps, func() bool {
		return h.container(id).ReasonCode == queue.ReasonBootFailing
	})
	c := h.container(id)
	if !strings.HasPrefix(c.Reason, "instances of type ") ||
		!strings.Contains(c.Reason, " fail to boot: runner list: exit status 127") ||
		!strings.Contains(c.Reason, "not found") {
		t.Fatalf("reason %q", c.Reason)
	}
	evs, _ := h.eng.Events(0, 1<<30)
	bootErrors := 0
	for _, e := range evs {
		if e.Kind == "boot_error" && strings.Contains(e.Reason, "runner list: exit status 127") {
			bootErrors++
		}
	}
	if bootErrors == 0 {
		t.Errorf("no boot_error event naming the step: %+v", evs)
	}

	missing.Store(false) // the operator fixes the runner
	h.until("running after the fix", 30*60, func() bool { return h.state(id) == queue.Running })
}
