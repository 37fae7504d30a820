package engine

import (
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest/wait"
)

// Run steps as soon as it starts: an engine just opened (a restart, or a
// node that has just won the lease) lists the cloud at once, since nothing
// starts before that listing and the probes after it. Here no tick comes
// within the test and nothing changes after Run starts, so only a step of
// Run's own can list.
func TestRunStepsAtOnce(t *testing.T) {
	cfg := testConfig(t)
	h := newHarness(t, cfg, fake.Options{})
	h.eng.opts.PassInterval = time.Hour
	steps := h.runInBackground()
	select {
	case <-steps:
	case <-time.After(wait.Budget(20 * time.Second)):
		t.Fatalf("Run ran no step in 20 s of its start (its pass interval is %s): the first listing waits for the first tick", h.eng.opts.PassInterval)
	}
	wait.Until(t, "the first cloud listing, started by Run's first step", 20*time.Second, h.eng.pool.Listed)
}
