package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/runner"
)

// badInstallExec fails every runner install as a shell does when the
// runner_path's directory is missing, while failing is set.
type badInstallExec struct {
	runner.Executor
	failing *atomic.Bool
}

func (e *badInstallExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	if e.failing.Load() && isInstall(cmd) {
		msg := "sh: 1: cannot create /missing/dir/runner.tmp: Directory nonexistent"
		return nil, []byte(msg), &runner.ExitError{Code: 2, Stderr: msg}
	}
	return e.Executor.Execute(ctx, cmd, stdin)
}

func isInstall(cmd string) bool {
	_, ok := runner.InstallPath(cmd)
	return ok
}

// TestBadRunnerPathFailsBootVisibly: a runner that cannot be installed
// shuts each instance down at once with the failing step in LastError and
// a boot_error event; after BootFailuresReported in a row, well within one
// timeout_booting, the type is reported failing and its creates back off
// (but are retried), and a successful boot ends that.
func TestBadRunnerPathFailsBootVisibly(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	h := newHarness(t, hopt{pool: func(o *Options) {
		inner := o.NewExecutor
		o.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
			e, err := inner(inst)
			if err != nil {
				return nil, err
			}
			return &badInstallExec{Executor: e, failing: &failing}, nil
		}
	}})
	h.step()
	start := h.clk.Now()
	var failed []cloud.InstanceID
	for len(failed) < BootFailuresReported {
		if err := h.pool.Create("small"); err != nil {
			t.Fatalf("create %d: %v", len(failed)+1, err)
		}
		h.pool.Wait()
		var id cloud.InstanceID
		for _, v := range h.pool.Instances(nil) {
			if v.ID != "" && v.State == StateBooting {
				id = v.ID
			}
		}
		if id == "" {
			t.Fatalf("no booting instance: %s", h.dump())
		}
		h.until(string(id)+" shut down", h.cfg.Cloud.TimeoutBooting, func() bool {
			st := h.state(id)
			return st == StateShutdown || st == ""
		})
		if v, _ := h.pool.Instance(id); v.ID != "" && !strings.Contains(v.LastError, "runner deploy: installing runner") {
			t.Errorf("LastError of %s = %q, want the failing step", id, v.LastError)
		}
		if !h.hasEvent(id, EventBootError, "Directory nonexistent") {
			t.Errorf("no boot_error event for %s: %+v", id, h.events)
		}
		failed = append(failed, id)
	}
	if took := h.clk.Now().Sub(start); took >= h.cfg.Cloud.TimeoutBooting {
		t.Errorf("took %s to report, want less than timeout_booting %s", took, h.cfg.Cloud.TimeoutBooting)
	}
	got := h.pool.BootFailing("small")
	if !strings.Contains(got, "runner deploy: installing runner") || !strings.Contains(got, "Directory nonexistent") {
		t.Fatalf("BootFailing(small) = %q", got)
	}
	if h.pool.BootFailing("large") != "" {
		t.Errorf("large reported failing")
	}
	var bf *BootFailingError
	if err := h.pool.Create("small"); !errors.As(err, &bf) || !strings.Contains(err.Error(), "instances of type small fail to boot: runner deploy") {
		t.Fatalf("create while failing: %v", err)
	}
	if err := h.pool.Create("large"); err != nil {
		t.Fatalf("create of another type: %v", err)
	}
	h.pool.Wait()

	// The operator fixes the host; the retry after the back-off boots.
	failing.Store(false)
	h.clk.Advance(bootRetryFirst)
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("retry after the back-off: %v", err)
	}
	h.pool.Wait()
	h.until("a small instance idle", 5*time.Minute, func() bool {
		for _, v := range h.pool.Instances(nil) {
			if v.Type == "small" && v.State == StateIdle {
				return true
			}
		}
		return false
	})
	if s := h.pool.BootFailing("small"); s != "" {
		t.Errorf("still failing after a successful boot: %q", s)
	}
}

// TestBootTimeoutNamesLastStep: an instance shut down by timeout_booting
// says which step it was stuck at.
func TestBootTimeoutNamesLastStep(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	h.drv.Configure(func(f *fake.Faults) { f.BrokenRate = 1 })
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	id := h.pool.Instances(nil)[0].ID
	h.until("boot timeout", h.cfg.Cloud.TimeoutBooting+time.Minute, func() bool { return h.state(id) == StateShutdown || h.state(id) == "" })
	if !h.hasEvent(id, EventBootError, "boot timeout") || !h.hasEvent(id, EventBootError, "boot failed: boot probe") {
		t.Fatalf("boot_error event without the step: %+v", h.events)
	}
}
