// Budgets: [dispatcher] max_hourly_cost and the [[budget]] caps on a
// label's $/h (docs/design.md §5, Budgets), and their one check.

package config

import (
	"math"
	"strings"
)

// Budget is one [[budget]]: the containers labelled Label ("key=value")
// may hold at most MaxHourlyCost dollars an hour of instances.
type Budget struct {
	Label         string
	MaxHourlyCost float64
}

// LabelKV splits the budget's label into its key and value.
func (b Budget) LabelKV() (key, value string) {
	key, value, _ = strings.Cut(b.Label, "=")
	return key, value
}

// budgetKeys is [[budget]]: a cap on the $/h of a label's containers.
var budgetKeys = commented(tables("budget", func() []Budget { return nil }, func(c *Config) *[]Budget { return &c.Budgets },
	"a cap on the $/h of the instances the containers with a label use", []*row{
		str("budget.label", "", func(c *Config, i int) *string { return &c.Budgets[i].Label },
			`one container label as key=value, such as "team=genomics"`, budgetLabel),
		number("budget.max_hourly_cost", 0, func(c *Config, i int) *float64 { return &c.Budgets[i].MaxHourlyCost },
			"the label's cap, in dollars per hour", dollarsPerHour),
	}))

// fleetCap checks [dispatcher] max_hourly_cost: a number of dollars per
// hour (0 = no cap) that at least the cheapest type fits under.
func fleetCap(f float64, s *site) {
	if !(f >= 0) || math.IsInf(f, 0) {
		s.bad("must be a number of dollars per hour, 0 for no cap (got %v)", f)
		return
	}
	if f == 0 || len(s.c.InstanceTypes) == 0 {
		return
	}
	cheapest := s.c.InstanceTypes[0].Price
	for _, t := range s.c.InstanceTypes {
		cheapest = min(cheapest, t.Price)
	}
	if cheapest > f {
		s.bad("is below the cheapest instance type's price ($%.2f/h): no instance could ever be created", cheapest)
	}
}

// dollarsPerHour checks a [[budget]]'s cap.
func dollarsPerHour(f float64, s *site) {
	if !(f > 0) || math.IsInf(f, 0) {
		s.bad("must be a number of dollars per hour above 0 (got %v)", f)
	}
}

// budgetLabel checks a [[budget]]'s label: one key=value, not already
// capped by an earlier [[budget]].
func budgetLabel(l string, s *site) {
	k, val, ok := strings.Cut(l, "=")
	if !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(val) == "" || strings.Contains(val, "=") {
		s.bad("must be one container label as key=value, such as \"team=genomics\" (got %q)", l)
		return
	}
	for _, b := range s.c.Budgets[:s.i] {
		if b.Label == l {
			s.bad("%q has two [[budget]] entries: keep one", l)
			return
		}
	}
}
