package metrics

import (
	"math"
	"testing"
	"time"

	"dispatch-tui/cloud/cloudtest"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
)

// The cost counters grow with the ledger, by type and kind, and the fleet's
// cap reports what it caps.
func TestCostMetrics(t *testing.T) {
	cfg := enginetest.Config(t)
	cfg.Dispatcher.MaxHourlyCost = 3
	m := NewRecorder()
	env := enginetest.New(t, cfg, cloudtest.Options{}, engine.Options{OnPass: m.ObservePass})
	m.Attach(env.Engine)
	id := env.Submit(queue.Spec{Command: []string{"run-forever"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}})
	env.Until("running", 60, func() bool { return env.Container(id).State == queue.Running })
	_, fams := scrape(t, m)
	before := find(fams, "dispatch_tui_cost_dollars_total", map[string]string{"type": "small", "kind": "running"})
	env.Clock.Advance(time.Hour)
	env.Step(1)
	_, fams = scrape(t, m)
	after := find(fams, "dispatch_tui_cost_dollars_total", map[string]string{"type": "small", "kind": "running"})
	if after == nil || fams["dispatch_tui_cost_dollars_total"].GetType().String() != "COUNTER" {
		t.Fatalf("no counter dispatch_tui_cost_dollars_total{type=small,kind=running}: %v", fams["dispatch_tui_cost_dollars_total"])
	}
	var was float64
	if before != nil {
		was = before.GetCounter().GetValue()
	}
	if grew := after.GetCounter().GetValue() - was; math.Abs(grew-1.0) > 0.01 {
		t.Errorf("an hour running a $1.00/h small added $%.4f, want $1.00", grew)
	}
	if boot := find(fams, "dispatch_tui_cost_dollars_total", map[string]string{"type": "small", "kind": "boot"}); boot == nil {
		t.Errorf("no boot line")
	}
	b := find(fams, "dispatch_tui_budget_dollars_per_hour", map[string]string{"budget": "fleet"})
	if b == nil || b.GetGauge().GetValue() != 1.0 {
		t.Errorf("budget_dollars_per_hour{budget=fleet} = %v, want 1", b)
	}
}
