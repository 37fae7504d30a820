package engine

import (
	"strings"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
)

// fleetRate is what the cloud's live instances cost an hour.
func (h *harness) fleetRate() float64 {
	rate := 0.0
	for _, id := range h.live() {
		if v, ok := h.eng.Instance(string(id)); ok {
			rate += v.Price
		}
	}
	return rate
}

// stepUnderCap is until, also failing if the fleet ever costs more than
// limit an hour.
func (h *harness) stepUnderCap(limit float64, what string, max int, cond func() bool) {
	h.t.Helper()
	h.until(what, max, func() bool {
		if r := h.fleetRate(); r > limit+1e-9 {
			h.t.Fatalf("the fleet costs $%.2f/h, over its cap of $%.2f/h\ninstances: %+v", r, limit, h.eng.Instances())
		}
		return cond()
	})
}

func (h *harness) wantReason(id string, code queue.ReasonCode, text string) {
	h.t.Helper()
	c := h.container(id)
	if c.ReasonCode != code || c.Reason != text {
		h.t.Errorf("%s: %s %q, want %s %q%s", id, c.ReasonCode, c.Reason, code, text, h.dumpContainers())
	}
}

// At the fleet's dollar cap no instance is created; the containers waiting
// read BUDGET; and the next dollars freed go to the higher-priority one,
// not to a lower one that an idle instance would fit (docs/design.md §5,
// Budgets).
func TestBudgetFleetCap(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatcher.MaxHourlyCost = 2.50 // two smalls ($1.00) fit, a third or a medium ($1.40) does not
	h := newHarness(t, cfg, fake.Options{})
	r1 := h.submit(-1, 0)
	r2 := h.submit(-1, 0)
	h.stepUnderCap(2.50, "R1 and R2 running", 60, func() bool {
		return h.state(r1) == queue.Running && h.state(r2) == queue.Running
	})
	low := h.submit(-1, 0, prio(1))
	high := h.submit(-1, 0, prio(5), vcpus(2)) // needs a medium
	h.step(5)
	if n := len(h.live()); n != 2 {
		t.Fatalf("%d instances at the cap, want 2: %+v", n, h.eng.Instances())
	}
	h.wantReason(high, queue.ReasonBudget, "fleet at $2.00/h of $2.50/h")
	h.wantReason(low, queue.ReasonBudget, "fleet at $2.00/h of $2.50/h")

	// R1 ends: its small goes idle. Low fits it, but the dollars are
	// high's: the small is shut down and high's medium created.
	if _, err := h.eng.KillContainer(r1, "test", "make room"); err != nil {
		t.Fatal(err)
	}
	h.stepUnderCap(2.50, "high running", 120, func() bool { return h.state(high) == queue.Running })
	if s := h.state(low); s == queue.Running {
		t.Fatalf("low ran before high got the dollars freed")
	}
	if typ := h.container(high).InstanceType; typ != "medium" {
		t.Errorf("high runs on %s, want medium", typ)
	}
	h.step(3)
	h.wantReason(low, queue.ReasonBudget, "fleet at $2.40/h of $2.50/h")
	if !strings.Contains(h.eventsOf(string(h.container(r1).InstanceID)), "at budget: freeing its dollars for "+high) {
		t.Errorf("no shutdown of R1's instance for high:%s", h.eventsOf(h.container(r1).InstanceID))
	}
}

// A label's cap stops that label's creates only.
func TestBudgetLabelCap(t *testing.T) {
	cfg := testConfig(t)
	cfg.Budgets = []config.Budget{{Label: "team=genomics", MaxHourlyCost: 1.50}}
	h := newHarness(t, cfg, fake.Options{})
	g1 := h.submit(-1, 0, label("team", "genomics"))
	h.until("G1 running", 60, func() bool { return h.state(g1) == queue.Running })
	g2 := h.submit(-1, 0, label("team", "genomics"))
	p1 := h.submit(-1, 0, label("team", "physics"))
	h.until("P1 running", 60, func() bool { return h.state(p1) == queue.Running })
	h.step(3)
	h.wantReason(g2, queue.ReasonBudget, "team=genomics at $1.00/h of $1.50/h")
	if n := len(h.live()); n != 2 {
		t.Errorf("%d instances, want G1's and P1's: %+v", n, h.eng.Instances())
	}
	if _, err := h.eng.KillContainer(g1, "test", "make room"); err != nil {
		t.Fatal(err)
	}
	h.until("G2 running", 60, func() bool { return h.state(g2) == queue.Running })
}
