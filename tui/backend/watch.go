// The watch: a long poll that wakes an attached console as soon as a
// container changes, and costs nothing while none does.

package backend

import (
	"context"
	"time"

	"dispatch-tui/engine/view"
)

// DefaultWatchWait is how long one watch request waits for a change; the
// daemon caps it (api.MaxWait).
const DefaultWatchWait = 30 * time.Second

// watchGap is the least time between two watch requests after a change:
// a busy queue changes every pass, and the console refreshes at most about
// this often anyway (its changes are coalesced).
const watchGap = 100 * time.Millisecond

// watchRetry is how long the watch waits after a failed request, or while
// the console has no copy of the containers yet (Snapshot reports the
// failure; the watch only stops asking for a while).
const watchRetry = time.Second

// watch sends on out (waiting until it is taken, or ctx ends) each time a
// container changed after the copy's generation or the last change it
// saw; it returns when ctx ends.
func (r *Remote) watch(ctx context.Context, out chan<- struct{}) {
	var since uint64
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for ctx.Err() == nil {
		if since == 0 {
			gen, err := r.watchFrom()
			if err != nil {
				if !pause(watchRetry) {
					return
				}
				continue
			}
			since = gen
		}
		ch, err := r.c.ContainerChanges(ctx, since, 1, r.watchWait)
		if err != nil {
			since = 0 // from the copy again, once Snapshot has read it
			if view.KindOf(err) == view.KindGone {
				// The daemon restarted: the console reads everything
				// again now, not at its next tick.
				select {
				case out <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
			if !pause(watchRetry) {
				return
			}
			continue
		}
		since = ch.Latest
		if len(ch.Items) == 0 && len(ch.Removed) == 0 {
			continue // the wait ended quietly
		}
		select {
		case out <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if !pause(watchGap) {
			return
		}
	}
}
