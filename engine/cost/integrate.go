// Dollars over a window: an instance's price integrated over its spans,
// and the allocation of each span's dollars to its containers.

package cost

import "time"

// createdForGrace: the containers an instance starts first are the ones it
// was created for when they start within this of its boot's end (the
// scheduler locks them to the type, not to the instance, so the ledger
// tells by time).
const createdForGrace = time.Minute

// portion is one span's dollars within a window.
type portion struct {
	span    int
	kind    Kind
	dollars float64
}

// dollars is the price integrated over [a, b): each price point holds
// from its time (the first from the start of the life) to the next's.
func (r *instanceRec) dollars(a, b time.Time) float64 {
	if !b.After(a) {
		return 0
	}
	total := 0.0
	for i, p := range r.Prices {
		start, end := a, b
		if i > 0 && p.At.After(start) {
			start = p.At
		}
		if i+1 < len(r.Prices) && r.Prices[i+1].At.Before(end) {
			end = r.Prices[i+1].At
		}
		if end.After(start) {
			total += p.Price * end.Sub(start).Hours()
		}
	}
	return total
}

// spanEnd is when span i ends: where the next begins, at the instance's
// end, or (still open) at now.
func (r *instanceRec) spanEnd(i int, now time.Time) time.Time {
	if i+1 < len(r.Spans) {
		return r.Spans[i+1].Start
	}
	if !r.End.IsZero() && r.End.Before(now) {
		return r.End
	}
	return now
}

// portions returns the dollars of each span of r within [from, to), to
// standing for now (an open span runs to it).
func (r *instanceRec) portions(from, to time.Time) []portion {
	var out []portion
	for i, s := range r.Spans {
		a, b := s.Start, r.spanEnd(i, to)
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if d := r.dollars(a, b); d > 0 {
			out = append(out, portion{span: i, kind: s.Kind, dollars: d})
		}
	}
	return out
}

// createdFor is the span whose containers the instance was created for
// (they bear its boot), or -1: the first span with containers, when the
// instance's life began with its boot and that span began within
// createdForGrace of the boot's end.
func (r *instanceRec) createdFor() int {
	if len(r.Spans) == 0 || r.Spans[0].Kind != Boot {
		return -1
	}
	i := 0
	for i < len(r.Spans) && r.Spans[i].Kind == Boot {
		i++
	}
	if i == len(r.Spans) {
		return -1
	}
	bootEnd := r.Spans[i].Start
	for ; i < len(r.Spans); i++ {
		s := r.Spans[i]
		if len(s.On) > 0 {
			if s.Start.Sub(bootEnd) <= createdForGrace {
				return i
			}
			return -1
		}
		if s.Kind != Idle {
			return -1
		}
	}
	return -1
}

// allocate calls fn with each container's part of the instance's dollars
// within [from, to): a running span's dollars shared by the requested
// shares of its containers, and the boot's dollars by those of the
// containers it was created for (docs/design.md §6.1). It returns the
// dollars of each kind, allocated or not.
func (l *Ledger) allocate(r *instanceRec, from, to time.Time, fn func(container string, kind Kind, dollars float64)) {
	bootTo := -2 // not yet looked up
	for _, p := range r.portions(from, to) {
		on := r.Spans[p.span].On
		if p.kind == Boot {
			if bootTo == -2 {
				bootTo = r.createdFor()
			}
			if bootTo < 0 {
				continue
			}
			on = r.Spans[bootTo].On
		}
		if len(on) == 0 {
			continue
		}
		sum := 0.0
		for _, id := range on {
			sum += l.shareOf(id)
		}
		for _, id := range on {
			fn(id, p.kind, p.dollars*l.shareOf(id)/sum)
		}
	}
}

func (l *Ledger) shareOf(id string) float64 {
	if c := l.conts[id]; c != nil && c.Share > 0 {
		return c.Share
	}
	return 1
}
