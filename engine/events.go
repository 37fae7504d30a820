// The event log newest first, a page at a time.

package engine

// The event log newest first (ls events, GET /v1/events?order=newest): the
// newest page, then older ones, each as cheap as its size.

import (
	"slices"

	"dispatch-tui/engine/queue"
)

// EventPage is one page of the event log, newest first.
type EventPage struct {
	Items []queue.Event
	// Total is how many events there are after since (counted by
	// sequence number).
	Total int
	// Before is where the next, older page ends (pass it as before);
	// 0 when this page reaches the oldest event after since.
	Before uint64
}

// EventsNewest returns up to limit events with since < seq < before
// (before 0 = no bound), newest first.
func (e *Engine) EventsNewest(since, before uint64, limit int) (EventPage, error) {
	first, last, ok := e.queue.EventRange()
	var p EventPage
	if !ok {
		return p, nil
	}
	lo := max(since, first-1) // events with lo < seq
	hi := last                // and seq <= hi
	if before > 0 {
		hi = min(hi, before-1)
	}
	if last > lo {
		p.Total = int(last - lo)
	}
	if limit <= 0 {
		limit = 1000
	}
	// Read (start, end] oldest first, extending start back over any gap
	// in the sequence numbers until limit events are found.
	end := hi
	for end > lo && len(p.Items) < limit {
		start := max(lo, end-min(end-lo, uint64(limit-len(p.Items))))
		evs, err := e.queue.Events(start, int(end-start))
		if err != nil {
			return p, err
		}
		evs = slices.DeleteFunc(evs, func(ev queue.Event) bool { return ev.Seq > end })
		slices.Reverse(evs)
		p.Items = append(p.Items, evs...)
		end = start
	}
	if end > lo && len(p.Items) > 0 {
		p.Before = p.Items[len(p.Items)-1].Seq
	}
	return p, nil
}
