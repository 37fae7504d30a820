// The queued work's estimate: what the containers waiting now would cost,
// from their locked type's price and the run times of the containers that
// finished on that type (docs/design.md §6.1).

package cost

import (
	"slices"
	"strings"
	"time"

	"dispatch-tui/engine/view"
)

// RunsKept is how many of a type's most recent finished runs its median
// run time is taken over: recent work says more about what waits now than
// last month's, and the sort stays small.
const RunsKept = 1000

// Waiting is what the estimate needs of the queue: the types the waiting
// containers are locked to, those waiting with no type chosen yet grouped
// by the types they may get, and the run times of finished containers by
// the type they ran on (oldest first).
type Waiting struct {
	Locked   []string
	Unlocked []Unlocked
	Runs     map[string][]time.Duration
}

// Unlocked is Containers waiting with no type chosen yet whose
// constraints allow Types (cheapest first; none: no type holds them).
type Unlocked struct {
	Types      []string
	Containers int
}

// EstimateQueued prices w: each container locked to a type costs the
// type's price (price; false for a type not configured) × the median of
// the type's last RunsKept runs, as if it had an instance to itself. A
// type no container has finished on, or not configured, is unknown: its
// containers are counted, not priced. A container not locked yet costs
// what it would on the cheapest to the dearest of the types it may get
// whose cost is known.
func EstimateQueued(w Waiting, price func(typeName string) (float64, bool)) *view.QueuedCost {
	q := &view.QueuedCost{}
	each := perType(w.Runs, price)
	byType := map[string]int{}
	for _, t := range w.Locked {
		byType[t]++
	}
	for t, n := range byType {
		l := view.QueuedLine{Type: t, Containers: n}
		if e, ok := each(t); ok {
			l.Known, l.PricePerHour, l.Finished, l.MedianRun = true, e.price, e.finished, e.median
			l.Dollars = float64(n) * e.dollars
			q.Dollars += l.Dollars
		} else {
			q.Unknown += n
		}
		q.Lines = append(q.Lines, l)
	}
	slices.SortFunc(q.Lines, func(a, b view.QueuedLine) int { return strings.Compare(a.Type, b.Type) })
	q.Low, q.High = q.Dollars, q.Dollars
	for _, u := range w.Unlocked {
		r := view.QueuedRange{Types: u.Types, Containers: u.Containers}
		for _, t := range u.Types {
			e, ok := each(t)
			if !ok {
				continue
			}
			d := float64(u.Containers) * e.dollars
			if !r.Known || d < r.Low {
				r.Low = d
			}
			if !r.Known || d > r.High {
				r.High = d
			}
			r.Known = true
		}
		if r.Known {
			q.Low += r.Low
			q.High += r.High
		} else {
			q.Untyped += u.Containers
		}
		q.Ranges = append(q.Ranges, r)
	}
	slices.SortFunc(q.Ranges, func(a, b view.QueuedRange) int { return slices.Compare(a.Types, b.Types) })
	return q
}

// typeEstimate is what one container costs on a type: its price × the
// median of the type's last RunsKept runs.
type typeEstimate struct {
	price    float64
	median   time.Duration
	finished int
	dollars  float64
}

// perType returns the estimate of a type, computed once per type; false
// for a type not configured or that no container has finished on.
func perType(runs map[string][]time.Duration, price func(string) (float64, bool)) func(string) (typeEstimate, bool) {
	memo := map[string]*typeEstimate{}
	return func(t string) (typeEstimate, bool) {
		if e, seen := memo[t]; seen {
			return derefOK(e)
		}
		var e *typeEstimate
		p, ok := price(t)
		r := runs[t]
		if len(r) > RunsKept {
			r = r[len(r)-RunsKept:]
		}
		if ok && len(r) > 0 {
			m := median(r)
			e = &typeEstimate{price: p, median: m, finished: len(r), dollars: p * m.Hours()}
		}
		memo[t] = e
		return derefOK(e)
	}
}

func derefOK(e *typeEstimate) (typeEstimate, bool) {
	if e == nil {
		return typeEstimate{}, false
	}
	return *e, true
}

// median is the middle run time (the mean of the two middle ones for an
// even count); runs is not changed.
func median(runs []time.Duration) time.Duration {
	s := slices.Clone(runs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
