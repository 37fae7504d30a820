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

// validateBudgets checks the fleet cap and every [[budget]].
func (v *validator) validateBudgets(c *Config) {
	if f := &c.Dispatcher.MaxHourlyCost; !(*f >= 0) || math.IsInf(*f, 0) {
		v.addAt(f, "must be a number of dollars per hour, 0 for no cap (got %v)", *f)
	}
	seen := map[string]bool{}
	for i := range c.Budgets {
		b := &c.Budgets[i]
		k, val, ok := strings.Cut(b.Label, "=")
		switch {
		case !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(val) == "" || strings.Contains(val, "="):
			v.addAt(&b.Label, "must be one container label as key=value, such as \"team=genomics\" (got %q)", b.Label)
		case seen[b.Label]:
			v.addAt(&b.Label, "%q has two [[budget]] entries: keep one", b.Label)
		}
		seen[b.Label] = true
		if f := &b.MaxHourlyCost; !(*f > 0) || math.IsInf(*f, 0) {
			v.addAt(f, "must be a number of dollars per hour above 0 (got %v)", *f)
		}
	}
	if c.Dispatcher.MaxHourlyCost > 0 && len(c.InstanceTypes) > 0 {
		cheapest := c.InstanceTypes[0].Price
		for _, t := range c.InstanceTypes {
			cheapest = min(cheapest, t.Price)
		}
		if cheapest > c.Dispatcher.MaxHourlyCost {
			v.addAt(&c.Dispatcher.MaxHourlyCost, "is below the cheapest instance type's price ($%.2f/h): no instance could ever be created", cheapest)
		}
	}
}
