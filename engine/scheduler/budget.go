// Budgets: the fleet's and each label's dollar caps, held before any create.

package scheduler

import (
	"errors"
	"fmt"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// Budgets (docs/design.md §5, Budgets): [dispatcher] max_hourly_cost caps
// the fleet's $/h (the prices of every instance not shutting down, creates
// in flight included), each [[budget]] that of one label's containers
// (each Running one, and each the pass starts or places on a booting
// instance, counts its type's price times its share of the type). No instance is created that would take a cap past its limit;
// the container waits with the pending reason BUDGET. As at quota, the
// first to wait on a cap keeps its lock, and none after it in the walk
// (lower priority, or equal and seen later) creates under that cap: the
// next dollars freed are its. At the fleet cap an idle instance a later
// container could start on is shut down for it instead (quota.go), since
// what it costs is what the waiting one needs.

// budgetCap is one cap and where the pass stands against it.
type budgetCap struct {
	name       string // "fleet", or the label "team=genomics"
	key, value string // the label's key and value; "" for the fleet
	limit      float64
	// rate is the $/h at the start of the pass plus this pass's creates.
	rate float64
	// blocked: a container waits on it this pass, so none after it in the
	// walk may create under it; headKept: that container kept its lock.
	blocked, headKept bool
	text              string // the pending reason, made when first needed in a pass
}

// BudgetRate is one cap and its $/h at a pass's start, for metrics.
type BudgetRate struct {
	Name        string
	RatePerHour float64
	Limit       float64
}

// errOverBudget: every fitting type would take a cap past its limit.
var errOverBudget = errors.New("over budget")

// newBudgets builds the caps of the config: the fleet's first, if set.
func (s *Scheduler) newBudgets() {
	if f := s.cfg.Dispatcher.MaxHourlyCost; f > 0 {
		s.budgets = append(s.budgets, budgetCap{name: "fleet", limit: f})
	}
	for _, b := range s.cfg.Budgets {
		k, v := b.LabelKV()
		s.budgets = append(s.budgets, budgetCap{name: b.Label, key: k, value: v, limit: b.MaxHourlyCost})
		s.labelBudgets = true
	}
}

// startBudgets measures every cap's rate at the start of the pass from
// the instances and the Running containers (running: the Running prefix
// of Active); the Locked ones are charged as the walk reaches them, in
// priority order.
func (s *Scheduler) startBudgets(st *Stats, running []*queue.Container) {
	if len(s.budgets) == 0 {
		return
	}
	for i := range s.budgets {
		b := &s.budgets[i]
		b.rate, b.blocked, b.headKept, b.text = 0, false, false, ""
		if b.key != "" {
			continue
		}
		for j := range s.views {
			if s.views[j].State != worker.StateShutdown {
				b.rate += s.views[j].Price
			}
		}
	}
	if s.labelBudgets {
		for _, c := range running {
			if c.State != queue.Running || len(c.Labels) == 0 {
				continue
			}
			t, ok := s.typeIndex[c.InstanceType]
			if !ok {
				continue
			}
			for i := range s.budgets {
				if b := &s.budgets[i]; b.key != "" && c.Labels[b.key] == b.value {
					b.rate += s.charge(b, c, t)
				}
			}
		}
	}
	st.Budgets = make([]BudgetRate, len(s.budgets))
	for i, b := range s.budgets {
		st.Budgets[i] = BudgetRate{Name: b.name, RatePerHour: b.rate, Limit: b.limit}
	}
}

// applies reports whether cap b covers container c.
func (b *budgetCap) applies(c *queue.Container) bool {
	return b.key == "" || c.Labels[b.key] == b.value
}

// charge is what an instance of type t for c adds to cap b: the type's
// price for the fleet, its price times c's share for a label.
func (s *Scheduler) charge(b *budgetCap, c *queue.Container, t int) float64 {
	p := s.types[t].Price
	if b.key == "" {
		return p
	}
	return p * s.shareOf(c, t)
}

// shareOf is c's share of type t: the larger of its vCPU and RAM shares,
// and at least 1/max_containers_per_instance (what it keeps others from).
func (s *Scheduler) shareOf(c *queue.Container, t int) float64 {
	it := &s.types[t]
	sh := 0.0
	if it.VCPUs > 0 {
		sh = float64(c.RuntimeConstraints.VCPUs) / float64(it.VCPUs)
	}
	if it.RAM > 0 {
		sh = max(sh, float64(c.RuntimeConstraints.RAM)/float64(it.RAM))
	}
	if s.maxPer > 0 {
		sh = max(sh, 1/float64(s.maxPer))
	}
	return min(sh, 1)
}

// overBudget returns the cap that stops an instance of type t for c, or
// nil.
func (s *Scheduler) overBudget(c *queue.Container, t int) *budgetCap {
	for i := range s.budgets {
		b := &s.budgets[i]
		if b.applies(c) && (b.blocked || b.rate+s.charge(b, c, t) > b.limit+1e-9) {
			return b
		}
	}
	return nil
}

// overLabelBudget returns the label cap that stops c from taking an
// instance of its cheapest fitting type t, new or not, or nil: what runs
// or waits for a boot counts against its label wherever it is.
func (s *Scheduler) overLabelBudget(c *queue.Container, t int) *budgetCap {
	for i := range s.budgets {
		b := &s.budgets[i]
		if b.key != "" && b.applies(c) && (b.blocked || b.rate+s.charge(b, c, t) > b.limit+1e-9) {
			return b
		}
	}
	return nil
}

// chargeTo adds c, given an instance of type t, to its caps: all of them
// for an instance created for it, its labels' only for one it joins.
func (s *Scheduler) chargeTo(c *queue.Container, t int, created bool) {
	for i := range s.budgets {
		if b := &s.budgets[i]; b.applies(c) && (created || b.key != "") {
			b.rate += s.charge(b, c, t)
		}
	}
}

// waitAtBudget leaves c waiting on cap b: the first to wait on it keeps
// (or takes) a lock on typeName, the rest are unlocked; all read BUDGET.
func (s *Scheduler) waitAtBudget(ps *passState, c *queue.Container, b *budgetCap, typeName string) {
	b.blocked = true
	if b.key == "" {
		ps.st.AtBudget = true
		s.noteAtQuota(ps, c)
	}
	if !b.headKept {
		b.headKept = true
		if c.State == queue.Queued {
			if err := ps.tx.Lock(c, typeName); err != nil {
				s.log.Error("lock", "container", c.ID, "err", err)
			}
		}
	} else {
		s.unlock(ps, c)
	}
	if b.text == "" {
		b.text = fmt.Sprintf("%s at $%.2f/h of $%.2f/h", b.name, b.rate, b.limit)
	}
	ps.setPending(c, queue.Pending{Code: queue.ReasonBudget, Arg: b.text})
}
