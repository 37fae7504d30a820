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
)

// At quota, an instance whose last container just exited is shut down as
// "idle and not needed" in the same pass that records the exit: the output
// of that container must be stored before the destroy, not lost with it.
func TestOutputKeptWhenInstanceShutDownAtQuotaRightAfterItsLastExit(t *testing.T) {
	cfg := testConfig(t)
	h := newHarness(t, cfg, fake.Options{Quota: 2})
	var small []string
	for i := range 2 {
		small = append(small, h.submit(time.Duration(5+i)*time.Second, 3))
	}
	for _, id := range small {
		h.runningOn(id, 30)
	}
	// The heads need large instances: at quota, the small instances are
	// shut down as soon as their containers exit.
	for range 2 {
		h.runningOn(h.submit(-1, 0, ram(20*gib), prio(5)), 120)
	}
	for _, id := range small {
		c := h.container(id)
		if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 3 {
			t.Fatalf("%s: %s exit %v, want Complete exit 3", id, c.State, c.ExitCode)
		}
		if _, still := h.eng.Instance(c.InstanceID); still {
			t.Fatalf("setup: instance %s of %s was not shut down", c.InstanceID, id)
		}
		out, err := h.eng.Logs(context.Background(), id, 0)
		if err != nil || !strings.Contains(string(out.Data), "exited 3") || c.LogsError != "" {
			t.Errorf("logs of %s (on %s, shut down at quota): %q, %v (logs_error %q); want its output%s", id, c.InstanceID, out.Data, err, c.LogsError, h.eventsOf(c.InstanceID))
		}
	}
}

// Logs says "yet" only for a container that has not finished; for a
// finished one without output it says why.
func TestLogsSayWhyOutputIsUnavailable(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	ctx := context.Background()

	queued := h.submit(time.Second, 0, prio(0))
	h.step(1)
	_, err := h.eng.Logs(ctx, queued, 0)
	if !errors.Is(err, ErrNoLogs) || !strings.Contains(err.Error(), "no output yet") {
		t.Errorf("queued: %v, want no output yet", err)
	}

	if _, err := h.eng.KillContainer(queued, "test", "not wanted"); err != nil {
		t.Fatal(err)
	}
	_, err = h.eng.Logs(ctx, queued, 0)
	var unavailable *LogsUnavailableError
	if !errors.As(err, &unavailable) || !strings.Contains(err.Error(), "never started") || strings.Contains(err.Error(), "yet") {
		t.Errorf("cancelled before it started: %v", err)
	}

	done := h.submit(5*time.Second, 0)
	h.runningOn(done, 30)
	h.until("complete", 30, func() bool { return h.state(done) == queue.Complete })
	if _, err := h.eng.Logs(ctx, done, 0); err != nil {
		t.Fatalf("complete: %v", err)
	}
	// Its instance unreachable from the moment its exit is listed, then
	// killed: the output is lost, and the record, an event, a counter and
	// Logs say why.
	// The window is between the listing that shows the exit and the
	// forget that stores the output; on a loaded machine the pool may
	// close it within one step, so a container that got through is
	// replaced by another (at most five tries).
	var other, inst2 string
	for try := 1; ; try++ {
		other = h.submit(5*time.Second, 0)
		inst2 = h.runningOn(other, 30)
		// The pool listed its exit once the instance no longer shows it;
		// the runner lists it until it is forgotten, which follows the
		// store of its output.
		listed := func() bool {
			if slices.Contains(h.instance(inst2).Containers, other) {
				return false
			}
			for _, st := range h.runnerList(inst2) {
				if st.ID == other && st.State == runner.StateExited {
					return true
				}
			}
			return false
		}
		h.until("exit listed or output stored", 30, func() bool {
			return listed() || h.state(other) == queue.Complete && h.container(other).LogsError == ""
		})
		if listed() {
			break
		}
		if try == 5 {
			t.Fatalf("in 5 tries the pool never listed an exit without storing its output in the same step")
		}
		t.Logf("try %d: %s's output was stored in the step its exit was listed; another container", try, other)
	}
	h.cloud.Break(cloud.InstanceID(inst2))
	h.until("probe failing", 30, func() bool { return h.instance(inst2).ProbeFailing })
	if _, err := h.eng.KillInstance(inst2, "test", "gone wrong"); err != nil {
		t.Fatal(err)
	}
	h.until("output lost", 30, func() bool { return h.container(other).LogsError != "" })
	if got := h.container(other); got.State != queue.Complete || !strings.HasPrefix(got.LogsError, "logs: lost: instance "+inst2) || !strings.Contains(got.LogsError, "while unreachable") {
		t.Errorf("%s: logs_error %q", got.State, got.LogsError)
	}
	if h.eng.LogsStats().Lost != 1 || !strings.Contains(h.eventsOf(other), "logs_error lost") {
		t.Errorf("lost counted %d, events:%s", h.eng.LogsStats().Lost, h.eventsOf(other))
	}
	_, err = h.eng.Logs(ctx, other, 0)
	if !errors.As(err, &unavailable) || !strings.Contains(err.Error(), "output unavailable: lost: instance "+inst2) {
		t.Errorf("logs of lost output: %v", err)
	}
}
