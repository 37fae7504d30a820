package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/cloudtest"
	"dispatch-tui/engine/queue"
)

// At quota, an instance whose last container just exited is shut down as
// "idle and not needed" in the same pass that records the exit: the output
// of that container must be stored before the destroy, not lost with it.
func TestOutputKeptWhenInstanceShutDownAtQuotaRightAfterItsLastExit(t *testing.T) {
	cfg := testConfig(t)
	h := newHarness(t, cfg, cloudtest.Options{Quota: 2})
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
		if err != nil || !strings.Contains(string(out), "exited 3") || c.LogsError != "" {
			t.Errorf("logs of %s (on %s, shut down at quota): %q, %v (logs_error %q); want its output%s", id, c.InstanceID, out, err, c.LogsError, h.eventsOf(c.InstanceID))
		}
	}
}
