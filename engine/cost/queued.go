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
// containers are locked to, how many wait with no type chosen yet, and the
// run times of finished containers by the type they ran on (oldest first).
type Waiting struct {
	Locked  []string
	Untyped int
	Runs    map[string][]time.Duration
}

// EstimateQueued prices w: each container locked to a type costs the
// type's price (price; false for a type not configured) × the median of
// the type's last RunsKept runs, as if it had an instance to itself. A
// type no container has finished on, or not configured, is unknown: its
// containers are counted, not priced.
func EstimateQueued(w Waiting, price func(typeName string) (float64, bool)) *view.QueuedCost {
	q := &view.QueuedCost{Untyped: w.Untyped}
	byType := map[string]int{}
	for _, t := range w.Locked {
		byType[t]++
	}
	for t, n := range byType {
		l := view.QueuedLine{Type: t, Containers: n}
		p, ok := price(t)
		runs := w.Runs[t]
		if len(runs) > RunsKept {
			runs = runs[len(runs)-RunsKept:]
		}
		if ok && len(runs) > 0 {
			l.Known, l.PricePerHour, l.Finished = true, p, len(runs)
			l.MedianRun = median(runs)
			l.Dollars = float64(n) * p * l.MedianRun.Hours()
			q.Dollars += l.Dollars
		} else {
			q.Unknown += n
		}
		q.Lines = append(q.Lines, l)
	}
	slices.SortFunc(q.Lines, func(a, b view.QueuedLine) int { return strings.Compare(a.Type, b.Type) })
	return q
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
