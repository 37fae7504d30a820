// Reports: containers' costs summed by label, type or state; the waste
// lines; the projection; the totals the metrics export.

package cost

import (
	"cmp"
	"slices"
	"time"

	"dispatch-tui/engine/view"
)

// TypeKind keys dollars by instance type and kind.
type TypeKind struct {
	Type string
	Kind Kind
}

// By is what a report sums containers' costs by (view.CostBy); ParseBy
// and ByNames read and name it, as the edge does.
type By = view.CostBy

// ParseBy reads a --by value (view.ParseCostBy).
var ParseBy = view.ParseCostBy

// ByNames lists the accepted --by values, for help and errors.
const ByNames = view.CostByNames

// NoValue is the group of containers without the label summed by.
const NoValue = "(none)"

// The report's shapes are the edge's (engine/view): the ledger fills
// them, the engine adds the caps and the queued estimate.
type (
	Group      = view.CostGroup
	Waste      = view.CostWaste
	Projection = view.CostProjection
	Report     = view.CostReport
)

// Query asks for a report.
type Query struct {
	By    By
	Since time.Time // zero: everything kept
	Now   time.Time
	// StateOf tells a container's state, for By state ("" when unknown).
	StateOf func(id string) string
}

// Report sums the ledger over [q.Since, q.Now).
func (l *Ledger) Report(q Query) Report {
	now := q.Now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	rep := Report{From: q.Since.UTC(), To: now, By: q.By.String()}
	type acc struct {
		dollars float64
		ids     map[string]struct{}
	}
	groups := map[string]*acc{}
	waste := map[TypeKind]float64{}
	for _, id := range l.sortedLocked() {
		r := l.insts[id]
		if r.End.IsZero() || r.End.After(now) {
			rep.Instances = append(rep.Instances, r.burn(id, now))
		}
		for _, p := range r.portions(rep.From, now) {
			rep.Bill += p.dollars
			if p.kind != Running {
				waste[TypeKind{r.Type, p.kind}] += p.dollars
			}
		}
		l.allocate(r, rep.From, now, func(id string, _ Kind, d float64) {
			rep.Allocated += d
			key := l.keyLocked(q, id, r.Type)
			g := groups[key]
			if g == nil {
				g = &acc{ids: map[string]struct{}{}}
				groups[key] = g
			}
			g.dollars += d
			g.ids[id] = struct{}{}
		})
	}
	for k, g := range groups {
		rep.Groups = append(rep.Groups, Group{Key: k, Dollars: g.dollars, Containers: len(g.ids)})
	}
	slices.SortFunc(rep.Groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Dollars, a.Dollars), cmp.Compare(a.Key, b.Key))
	})
	for tk, d := range waste {
		w := Waste{Type: tk.Type, Kind: tk.Kind, Dollars: d}
		if rep.Bill > 0 {
			w.Share = d / rep.Bill
		}
		rep.Waste = append(rep.Waste, w)
	}
	slices.SortFunc(rep.Waste, func(a, b Waste) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(slices.Index(Kinds, a.Kind), slices.Index(Kinds, b.Kind)))
	})
	rep.Projection = l.projectLocked(now)
	return rep
}

// burn is r's price now and its dollars so far, for an instance not gone.
func (r *instanceRec) burn(id string, now time.Time) view.InstanceCost {
	c := view.InstanceCost{ID: id, Type: r.Type, RatePerHour: r.Prices[len(r.Prices)-1].Price}
	for _, p := range r.portions(time.Time{}, now) {
		c.Dollars += p.dollars
	}
	return c
}

// sortedLocked returns the instances' ids in order, so that sums are
// added in the same order every time.
func (l *Ledger) sortedLocked() []string {
	ids := make([]string, 0, len(l.insts))
	for id := range l.insts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (l *Ledger) keyLocked(q Query, id, typ string) string {
	var k string
	switch {
	case q.By.Label != "":
		if c := l.conts[id]; c != nil {
			k = c.Labels[q.By.Label]
		}
	case q.By.Field == "type":
		k = typ
	case q.By.Field == "state" && q.StateOf != nil:
		k = q.StateOf(id)
	}
	if k == "" {
		return NoValue
	}
	return k
}

// projectLocked is the burn rate at now and the day's and month's cost at
// it.
func (l *Ledger) projectLocked(now time.Time) Projection {
	var p Projection
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	var monthSoFar float64
	for _, r := range l.insts {
		if r.End.IsZero() || r.End.After(now) {
			p.RatePerHour += r.Prices[len(r.Prices)-1].Price
		}
		for _, x := range r.portions(month, now) {
			monthSoFar += x.dollars
		}
		for _, x := range r.portions(day, now) {
			p.Today += x.dollars
		}
	}
	p.Day = p.Today + p.RatePerHour*day.AddDate(0, 0, 1).Sub(now).Hours()
	p.Month = monthSoFar + p.RatePerHour*month.AddDate(0, 1, 0).Sub(now).Hours()
	return p
}

// Costs returns what each of ids cost so far (no entry, read as 0, for
// one the ledger does not know; nil when it knows none): its shares of its
// instances' running spans and of the boot of one created for it.
func (l *Ledger) Costs(ids []string, now time.Time) map[string]float64 {
	now = now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Made only for ids the ledger knows: a changes page of 1,000 waiting
	// containers asks for all of them, and knows none.
	var want, insts map[string]bool
	for _, id := range ids {
		if c := l.conts[id]; c != nil {
			if want == nil {
				want, insts = map[string]bool{}, map[string]bool{}
			}
			want[id] = true
			for _, i := range c.Instances {
				insts[i] = true
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	out := make(map[string]float64, len(want))
	for id := range insts {
		r := l.insts[id]
		if r == nil {
			continue
		}
		l.allocate(r, time.Time{}, now, func(c string, _ Kind, d float64) {
			if want[c] {
				out[c] += d
			}
		})
	}
	return out
}

// Totals returns the dollars of every type and kind since the ledger
// began, up to now: they only grow (the metrics' counters).
func (l *Ledger) Totals(now time.Time) map[TypeKind]float64 {
	now = now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[TypeKind]float64, len(l.pruned)+4)
	for k, d := range l.pruned {
		out[k] += d
	}
	for _, r := range l.insts {
		for _, p := range r.portions(time.Time{}, now) {
			out[TypeKind{r.Type, p.kind}] += p.dollars
		}
	}
	return out
}

// LabelTotals returns the dollars the containers of each counted label
// (CountLabels) have cost since the ledger began, up to now: they only grow
// (the metrics' counters).
func (l *Ledger) LabelTotals(now time.Time) map[string]float64 {
	now = now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]float64, len(l.labels))
	for _, lb := range l.labels {
		out[lb] = l.prunedLabels[lb]
	}
	if len(l.labels) == 0 {
		return out
	}
	for _, r := range l.insts {
		l.allocate(r, time.Time{}, now, func(c string, _ Kind, d float64) {
			for _, lb := range l.labels {
				if l.hasLabelLocked(c, lb) {
					out[lb] += d
				}
			}
		})
	}
	return out
}
