package engine

import (
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/worker"
)

// A hold the verb answered outlives a restart that came before the
// instance's tag could be written (the cloud refused the tag write), on
// either store; and what is kept for an instance goes with it.
func TestHoldOutlivesRestartBeforeItsTag(t *testing.T) {
	for _, kind := range []string{"bolt", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			cfg := testConfig(t)
			if kind == "postgres" {
				cfg.Store.URL = pgtest.NewDatabase(t)
			}
			h := newHarness(t, cfg, fake.Options{})
			held := idleInstance(h)
			h.cloud.Configure(func(f *fake.Faults) { f.RateLimitedUntil = h.clk.Now().Add(time.Minute) })
			if _, err := h.eng.HoldInstance(held, "test", "keep for debugging"); err != nil {
				t.Fatal(err)
			}
			h.eng.Settle()
			if tag := tagOf(h, held); tag != string(worker.IdleRun) {
				t.Fatalf("setup: the tag write went through (%q) despite the rate limit", tag)
			}
			h.restart()
			h.clk.Advance(time.Minute)
			h.until("listed again", 20, func() bool { _, ok := h.eng.pool.Instance(cloud.InstanceID(held)); return ok })
			if got := h.instance(held).IdleBehavior; got != worker.IdleHold {
				t.Fatalf("after a restart before the tag was written, %s is %s; want hold (the verb answered)", held, got)
			}
			h.until("the tag follows the kept hold", 20, func() bool {
				return tagOf(h, held) == string(worker.IdleHold)
			})
			if _, err := h.eng.KillInstance(held, "test", ""); err != nil {
				t.Fatal(err)
			}
			h.until("gone", 30, func() bool { _, ok := h.eng.pool.Instance(cloud.InstanceID(held)); return !ok })
			h.step(1)
			h.restart()
			if ids := h.eng.behaviors.KeptInstances(); len(ids) != 0 {
				t.Fatalf("after the instance went, kept for %v; want nothing", ids)
			}
		})
	}
}

// tagOf is the idle behaviour tag the cloud holds for instance id.
func tagOf(h *harness, id string) string {
	inst, ok := h.cloud.Instance(cloud.InstanceID(id))
	if !ok {
		return ""
	}
	return inst.Tags()[cloud.TagIdleBehavior]
}
