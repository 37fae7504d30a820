// An instance the provider ended during its launch: its create failed after all.

package worker

import (
	"log/slog"
	"time"
)

// launchFailedLocked handles an instance that left the listing because
// the provider ended it during its launch (cloud.LaunchFailer): the create
// that made it failed after all. The operator sees why (an event on the
// instance, and the create's cloud_error), and the failure backs off as a
// refused create would (a capacity error blocks the type for a while), so
// that the pool does not create again and again in silence.
func (p *Pool) launchFailedLocked(w *instance, err error, now time.Time) {
	p.eventLocked(now, w.v.ID, EventState, "ended by the provider during its launch: "+err.Error(), slog.LevelWarn)
	// No tags: a retry with this instance's would get the same instance.
	p.createDoneLocked(nil, w.itype, nil, nil, err)
}
