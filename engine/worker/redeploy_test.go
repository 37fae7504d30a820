package worker

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/runner"
)

// installCounter counts the runner install lines sent to any instance,
// whatever their outcome.
type installCounter struct{ n atomic.Int32 }

func (c *installCounter) wrap(o *Options) {
	inner := o.NewExecutor
	o.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
		e, err := inner(inst)
		if err != nil {
			return nil, err
		}
		return &countingExec{Executor: e, c: c}, nil
	}
}

type countingExec struct {
	runner.Executor
	c *installCounter
}

func (e *countingExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	if _, ok := runner.InstallPath(cmd); ok {
		e.c.n.Add(1)
	}
	return e.Executor.Execute(ctx, cmd, stdin)
}

// startRunning starts containers on id and steps until a list shows them
// all running.
func (h *harness) startRunning(id cloud.InstanceID, specs ...runner.Spec) {
	h.t.Helper()
	for _, s := range specs {
		if err := h.pool.StartContainer(id, s); err != nil {
			h.t.Fatal(err)
		}
	}
	h.until("containers listed running", time.Minute, func() bool {
		v := h.view(id)
		for _, s := range specs {
			if i := findStatus(v.Reported, s.ID); i < 0 || v.Reported[i].State != runner.StateRunning {
				return false
			}
		}
		return true
	})
}

// A ready instance whose runner binary is deleted while its containers run
// answers "not found" (exit 127): the probe installs the runner again and
// reads its list as usual, so the exit of a container that ended meanwhile
// is collected, with no restart, and the instance is never shown
// unreachable.
func TestDeletedRunnerIsRedeployed(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	h.startRunning(id, spec("short", fake.Cmd(15*time.Second, 3)...), spec("long", fake.Cmd(time.Hour, 0)...))
	installs := h.drv.Stats().Installs

	h.drv.DeleteRunner(id)
	h.until("the short container's exit listed", time.Minute, func() bool {
		if v := h.view(id); !v.UnreachableSince.IsZero() || v.State == StateShutdown {
			t.Fatalf("runner deleted: shown unreachable or shut down: %+v", v)
		}
		v := h.view(id)
		i := findStatus(v.Reported, "short")
		return i >= 0 && v.Reported[i].State == runner.StateExited
	})
	v := h.view(id)
	if i := findStatus(v.Reported, "short"); v.Reported[i].ExitCode != 3 {
		t.Fatalf("short exited %d, want 3", v.Reported[i].ExitCode)
	}
	if !slices.Equal(v.Containers, []string{"long"}) || v.State != StateRunning || v.ProbeFailing || v.LastError != "" {
		t.Fatalf("after the redeploy: %+v", v)
	}
	if n := h.drv.Stats().Installs; n != installs+1 {
		t.Fatalf("installs = %d, want %d (one redeploy)", n, installs+1)
	}
	evs := h.eventsOf(id, EventRunnerRedeploy)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "installed again") || !strings.Contains(evs[0].Message, "exit status 127") {
		t.Fatalf("want one %s event naming the missing runner, got %+v", EventRunnerRedeploy, evs)
	}
	if evs := h.eventsOf(id, EventProbeError); len(evs) != 0 {
		t.Fatalf("runner deleted: %s events %+v", EventProbeError, evs)
	}
}

// An install that fails on an instance that answers (a full disk) is not
// retried at every probe but after a growing delay, with the error as the
// instance's last error and one event. The instance is not unreachable:
// its containers stay Running and neither timeout_probe nor
// timeout_unreachable gives up on them. Once an install succeeds, their
// exits are read as usual.
func TestFailedRedeployBacksOff(t *testing.T) {
	var installs installCounter
	h := newHarness(t, hopt{
		cfg: func(c *config.Config) {
			c.Cloud.TimeoutProbe = 30 * time.Second
			c.Cloud.TimeoutUnreachable = 30 * time.Second
		},
		pool: installs.wrap,
	})
	h.step()
	id := h.createIdle("small")
	h.startRunning(id, spec("short", fake.Cmd(15*time.Second, 3)...), spec("long", fake.Cmd(time.Hour, 0)...))

	h.drv.FailInstalls(id, "cat: write error: No space left on device")
	h.drv.DeleteRunner(id)
	before := installs.n.Load()
	h.until("the failed install shown", time.Minute, func() bool { return h.view(id).ProbeFailing })
	failedAt := h.clk.Now()
	v := h.view(id)
	if !strings.Contains(v.LastError, "No space left on device") || !strings.Contains(v.LastError, "next try after") ||
		!v.UnreachableSince.IsZero() || !slices.Contains(v.Containers, "long") || v.State != StateRunning {
		t.Fatalf("after a failed install: %+v", v)
	}
	if n := installs.n.Load() - before; n != 1 {
		t.Fatalf("%d installs tried, want 1", n)
	}

	// Probes go on (every probe_interval) without another install until
	// redeployRetryFirst has passed.
	for h.clk.Now().Sub(failedAt) < redeployRetryFirst-2*time.Second {
		h.clk.Advance(time.Second)
		h.step()
	}
	if n := installs.n.Load() - before; n != 1 {
		t.Fatalf("%d installs tried within %s of the first failure, want 1", n, redeployRetryFirst)
	}
	h.until("a second install tried", time.Minute, func() bool { return installs.n.Load()-before == 2 })

	// Long past timeout_probe and timeout_unreachable: kept, not given up.
	h.run(3 * time.Minute)
	v = h.view(id)
	if v.State != StateRunning || !v.UnreachableSince.IsZero() || v.ContainersLost != "" || !slices.Contains(v.Containers, "long") {
		t.Fatalf("runner that cannot be installed: %+v", v)
	}
	if evs := h.eventsOf(id, EventGiveUp); len(evs) != 0 {
		t.Fatalf("gave up on an instance that answers: %+v", evs)
	}
	if n := installs.n.Load() - before; n > 5 {
		t.Fatalf("%d installs tried in %s: no back-off", n, h.clk.Now().Sub(failedAt))
	}
	evs := h.eventsOf(id, EventRunnerRedeploy)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "No space left on device") {
		t.Fatalf("want one %s event for the run of failures, got %+v", EventRunnerRedeploy, evs)
	}

	h.drv.FailInstalls(id, "")
	h.until("the short container's exit listed", 15*time.Minute, func() bool {
		v := h.view(id)
		i := findStatus(v.Reported, "short")
		return i >= 0 && v.Reported[i].State == runner.StateExited && v.Reported[i].ExitCode == 3
	})
	v = h.view(id)
	if v.ProbeFailing || v.LastError != "" || !slices.Equal(v.Containers, []string{"long"}) {
		t.Fatalf("after a successful install: %+v", v)
	}
	evs = h.eventsOf(id, EventRunnerRedeploy)
	if len(evs) != 2 || !strings.Contains(evs[1].Message, "installed again") || !strings.Contains(evs[1].Message, "failed installs") {
		t.Fatalf("want a second %s event for the install, got %+v", EventRunnerRedeploy, evs)
	}
	if evs := h.eventsOf(id, EventProbeError); len(evs) != 0 {
		t.Fatalf("runner deleted: %s events %+v", EventProbeError, evs)
	}
}

// A start sent while the runner binary is missing exits 127: the runner
// never saw it, so it is reported as never sent (not an attempt), and the
// probe that follows installs the runner again.
func TestStartOnDeletedRunnerIsNotAnAttempt(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	h.drv.DeleteRunner(id)
	if err := h.pool.StartContainer(id, spec("c1", fake.Cmd(time.Minute, 0)...)); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	fs := h.pool.TakeStartFailures()
	if len(fs) != 1 || fs[0].ContainerID != "c1" || !fs[0].NeverSent || !strings.Contains(fs[0].Err.Error(), "exit status 127") {
		t.Fatalf("want c1's start reported never sent with exit status 127, got %+v", fs)
	}
	h.until("the runner installed again", time.Minute, func() bool { return len(h.eventsOf(id, EventRunnerRedeploy)) == 1 })
	if v := h.view(id); v.ProbeFailing || v.State != StateIdle || len(v.Containers) != 0 {
		t.Fatalf("after the redeploy: %+v", v)
	}
}
