package metrics

import (
	"math"

	dto "github.com/prometheus/client_model/go"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
)

// The cost counters grow with the ledger, by type and kind, and the fleet's
// cap reports what it caps.
func TestCostMetrics(t *testing.T) {
	cfg := enginetest.Config(t)
	cfg.Dispatcher.MaxHourlyCost = 3
	cfg.Budgets = []config.Budget{{Label: "team=genomics", MaxHourlyCost: 2}}
	m := NewRecorder()
	env := enginetest.New(t, cfg, fake.Options{}, engine.Options{OnPass: m.ObservePass})
	m.Attach(env.Engine)
	id := env.Submit(queue.Spec{Command: []string{"run-forever"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}, Labels: map[string]string{"team": "genomics"}})
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
	if find(fams, "dispatch_tui_cost_dollars_total", map[string]string{"type": "small", "kind": "boot"}) == nil {
		t.Errorf("no boot line")
	}
	lb := find(fams, "dispatch_tui_cost_label_dollars_total", map[string]string{"label": "team=genomics"})
	if lb == nil || math.Abs(lb.GetCounter().GetValue()-after.GetCounter().GetValue()-boot(fams)) > 1e-9 {
		t.Errorf("cost_label_dollars_total{label=team=genomics} = %v, want its running and boot dollars", lb)
	}
	b := find(fams, "dispatch_tui_budget_dollars_per_hour", map[string]string{"budget": "fleet"})
	if b == nil || b.GetGauge().GetValue() != 1.0 {
		t.Errorf("budget_dollars_per_hour{budget=fleet} = %v, want 1", b)
	}
}

// boot is the small type's boot dollars in fams.
func boot(fams map[string]*dto.MetricFamily) float64 {
	m := find(fams, "dispatch_tui_cost_dollars_total", map[string]string{"type": "small", "kind": "boot"})
	if m == nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
