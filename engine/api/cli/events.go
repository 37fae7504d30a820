// ls events: newest first, a page a request.

package cli

// ls events: the newest first, a page a request (GET /v1/events?order=newest),
// after a sequence number or within a duration.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// eventFlags are ls events' selection.
type eventFlags struct {
	since  string // a sequence number or a duration
	before uint64
	limit  int

	sinceSeq  uint64
	sinceTime time.Duration // > 0: events of the last sinceTime
}

// check reads --since and checks --limit.
func (f *eventFlags) check() error {
	if f.limit < 0 {
		return usagef("--limit must not be negative (0 = all)")
	}
	if f.since == "" {
		return nil
	}
	if n, err := strconv.ParseUint(f.since, 10, 64); err == nil {
		f.sinceSeq = n
		return nil
	}
	d, err := time.ParseDuration(f.since)
	if err != nil || d <= 0 {
		return usagef("--since wants an event's sequence number or a duration such as 10m or 2h, got %q", f.since)
	}
	f.sinceTime = d
	return nil
}

// listEvents gets the newest events f selects and the footer that says
// how many more there are.
func listEvents(ctx context.Context, c *api.Client, f *eventFlags, now time.Time) ([]view.Event, int, []string, error) {
	var out []view.Event
	var cutoff time.Time
	if f.sinceTime > 0 {
		cutoff = now.Add(-f.sinceTime)
	}
	before, avail := f.before, 0
	for {
		n := api.MaxListLimit
		if f.limit > 0 {
			n = min(n, f.limit-len(out))
		}
		p, err := c.EventsNewest(ctx, f.sinceSeq, before, n)
		if err != nil {
			return nil, 0, nil, err
		}
		if avail == 0 {
			avail = p.Available
		}
		for _, e := range p.Items {
			if !cutoff.IsZero() && e.Time.Before(cutoff) {
				// Older than the duration: the rest are too.
				return out, len(out), nil, nil
			}
			out = append(out, e)
		}
		before = p.Before
		full := f.limit > 0 && len(out) >= f.limit
		switch {
		case before == 0 || len(p.Items) == 0:
			if cutoff.IsZero() {
				avail = max(avail, len(out))
			} else {
				avail = len(out)
			}
			return out, avail, nil, nil
		case full && cutoff.IsZero():
			return out, avail, []string{fmt.Sprintf("(%d of %d shown, newest first; older: --before %d, all: --limit 0)", len(out), avail, before)}, nil
		case full:
			return out, len(out), []string{fmt.Sprintf("(%d shown, newest first; more may match: --before %d, or --limit 0)", len(out), before)}, nil
		}
	}
}
