// The watches: long polls that wake an attached console as soon as a
// container or an instance changes, and cost nothing while none does.

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

// watched is a list the console keeps a copy of, as a watch sees it.
type watched struct {
	// from is the generation of the copy (errNoCopy before its first
	// read).
	from func() (uint64, error)
	// poll asks for a change after since, waiting up to wait: the
	// generation now, and whether anything changed.
	poll func(ctx context.Context, since uint64, wait time.Duration) (latest uint64, changed bool, err error)
}

// containersWatched and instancesWatched are r's two copies, watched.
func (r *Remote) containersWatched() watched {
	return watched{from: r.watchFrom, poll: func(ctx context.Context, since uint64, wait time.Duration) (uint64, bool, error) {
		ch, err := r.c.ContainerChanges(ctx, since, 1, wait)
		return ch.Latest, len(ch.Items) > 0 || len(ch.Removed) > 0, err
	}}
}

func (r *Remote) instancesWatched() watched {
	return watched{from: r.instWatchFrom, poll: func(ctx context.Context, since uint64, wait time.Duration) (uint64, bool, error) {
		ch, err := r.c.InstanceChanges(ctx, since, 1, wait)
		return ch.Latest, len(ch.Items) > 0 || len(ch.Removed) > 0, err
	}}
}

// watch sends on out (waiting until it is taken, or ctx ends) each time
// what w watches changed after the copy's generation or the last change
// it saw; it returns when ctx ends.
func (r *Remote) watch(ctx context.Context, out chan<- struct{}, w watched) {
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
			gen, err := w.from()
			if err != nil {
				if !pause(watchRetry) {
					return
				}
				continue
			}
			since = gen
		}
		latest, changed, err := w.poll(ctx, since, r.watchWait)
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
		since = latest
		if !changed {
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
