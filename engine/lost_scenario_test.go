package engine

import (
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

// A container killed together with its supervisor (as a host reboot kills
// every process) has no exit: its runner lists it lost. It runs again with
// the attempt counted, and with no attempts left it ends Cancelled with
// the runner's reason, never Complete with exit -1.
func TestContainerLostWithItsSupervisorRunsAgain(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	victim := h.submit(-1, 0, maxAttempts(2))

	for attempt := 1; attempt <= 2; attempt++ {
		inst := h.runningOn(victim, 60)
		if c := h.container(victim); c.Attempts != attempt {
			t.Fatalf("attempt %d: container has attempts=%d", attempt, c.Attempts)
		}
		h.cloud.CrashContainer(cloud.InstanceID(inst), victim)
		if attempt == 1 {
			h.until("victim requeued and running again", 60, func() bool {
				c := h.container(victim)
				return c.Attempts == 2 && c.State == queue.Running
			})
		}
	}
	h.until("victim final", 60, func() bool { return h.state(victim).Final() })
	c := h.container(victim)
	if c.State != queue.Cancelled || c.ReasonCode != queue.ReasonMaxAttempts || c.ExitCode != nil || c.Attempts != 2 {
		t.Fatalf("victim: %s %s %q exit=%s attempts=%d; want Cancelled %s after 2 attempts, no exit code",
			c.State, c.ReasonCode, c.Reason, exitOf(c), c.Attempts, queue.ReasonMaxAttempts)
	}
	if !contains(c.Reason, runner.LostKilled) {
		t.Fatalf("victim reason %q does not say %q", c.Reason, runner.LostKilled)
	}
	if n := h.cloud.StartCount(victim); n != 2 {
		t.Fatalf("victim started %d times, want 2", n)
	}
	if evs := h.eventsOf(victim); !contains(evs, "lost on ") {
		t.Fatalf("no event says the first attempt was lost:\n%s", evs)
	}
}
