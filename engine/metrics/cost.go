// The cost metrics: the dollars every instance type has cost by kind
// (running, idle, boot, drain) and the containers of each [[budget]] label,
// from the cost ledger, and the $/h each dollar cap caps now
// (docs/design.md §6.1, §5 Budgets).

package metrics

import (
	"cmp"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"dispatch-tui/engine/cost"
)

// costCollector reads the ledger's totals and the last pass's budgets at
// scrape time.
type costCollector struct {
	m       *Metrics
	dollars *prometheus.Desc
	label   *prometheus.Desc
	budget  *prometheus.Desc
}

func newCostCollector(m *Metrics) *costCollector {
	return &costCollector{
		m: m,
		dollars: prometheus.NewDesc(name("cost_dollars_total"),
			"Dollars instances of each type have cost, by what they were doing: running (containers bear it), idle, boot or drain (draining or shutting down). From the cost ledger, which a restart does not reset.", []string{"type", "kind"}, nil),
		label: prometheus.NewDesc(name("cost_label_dollars_total"),
			"Dollars the containers of each [[budget]] label have cost (their shares of running and boot time), from the cost ledger. A family of its own: cost_dollars_total's labels are type and kind.", []string{"label"}, nil),
		budget: prometheus.NewDesc(name("budget_dollars_per_hour"),
			"What each dollar cap caps now, in $/h, at the last scheduler pass: budget is \"fleet\" ([dispatcher] max_hourly_cost) or a [[budget]]'s label.", []string{"budget"}, nil),
	}
}

func (c *costCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.dollars
	ch <- c.label
	ch <- c.budget
}

func (c *costCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.m.eng.Load()
	if e == nil {
		return
	}
	totals := e.CostTotals()
	keys := make([]cost.TypeKind, 0, len(totals))
	for k := range totals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b cost.TypeKind) int { return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Kind, b.Kind)) })
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(c.dollars, prometheus.CounterValue, totals[k], k.Type, string(k.Kind))
	}
	lt := e.CostLabelTotals()
	for _, lb := range slices.Sorted(maps.Keys(lt)) {
		ch <- prometheus.MustNewConstMetric(c.label, prometheus.CounterValue, lt[lb], lb)
	}
	for _, b := range e.LastPass().Budgets {
		ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, b.RatePerHour, b.Name)
	}
}
