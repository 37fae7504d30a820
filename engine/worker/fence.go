// Fencing: containers on an unreachable instance kept running until given up.

package worker

import (
	"fmt"
	"log/slog"
	"time"

	"dispatch-tui/cloud"
)

// Fencing (docs/design.md §10.1): a container on an instance that does not
// answer may still be running there, so the scheduler keeps its record
// Running, and does not start it again, until the pool says its containers
// are lost: InstanceView.ContainersLost. The pool says so when the
// provider accepted the instance's destroy, when an operator killed the
// instance, or when it has been unreachable past timeout_unreachable (the
// one case where an old attempt may indeed still run). An instance that
// answers again is read before anything else is decided: its runner's
// list says which containers ended, with their exit codes, and which still
// run.

// mayHoldContainers reports whether w may have containers the scheduler
// cares about: running, starting, or exited but not yet forgotten (their
// exit code or output not collected). An instance found in the listing
// and never read (after a restart, say) may hold anything.
func (w *instance) mayHoldContainers() bool {
	return w.v.State == StateUnknown || len(w.v.Containers) > 0 || len(w.starts) > 0 || len(w.v.Reported) > 0
}

// unreachableSince is when w last answered a probe (or appeared).
func (w *instance) unreachableSince() time.Time {
	since := w.v.AppearedAt
	if w.lastProbeOK.After(since) {
		since = w.lastProbeOK
	}
	return since
}

// keepForCollection reports whether w, past timeout_probe, must stay out of
// shutdown: its destroy needs to reach it, which can only happen once it
// answers again, and then the destroy would end containers whose results
// were never collected. It stays, unreachable, until it answers (and its
// list is applied) or timeout_unreachable gives up on it. The first time,
// it says so in an event.
func (p *Pool) keepForCollection(w *instance, now time.Time) bool {
	if !cloud.DestroyNeedsReach(w.inst) || !w.mayHoldContainers() {
		return false
	}
	if !w.keptForCollection {
		w.keptForCollection = true
		p.eventLocked(now, w.v.ID, EventShutdownDeferred, fmt.Sprintf(
			"probes failing for %s, but not shut down: its containers may still be running, and a destroy could only reach it once it answers; their records stay Running until it does",
			now.Sub(w.unreachableSince()).Round(time.Second)), slog.LevelWarn)
	}
	return true
}

// giveUpUnreachableLocked writes off the containers of an instance
// unreachable for longer than timeout_unreachable (when set): the scheduler
// requeues them although they may still be running there, and the
// instance is shut down unless it is held.
func (p *Pool) giveUpUnreachableLocked(w *instance, now time.Time) {
	if p.s.timeoutUnreachable <= 0 || !w.probeFailing || w.v.ContainersLost != "" || w.v.State == StateBooting || !w.mayHoldContainers() {
		return // nothing to give up (timeout_probe deals with an empty one)
	}
	d := now.Sub(w.unreachableSince())
	if d <= p.s.timeoutUnreachable {
		return
	}
	w.viewChanged()
	w.v.ContainersLost = fmt.Sprintf("instance %s unreachable for %s (timeout_unreachable %s): its containers are requeued, but the old attempts may still be running there",
		w.v.ID, d.Round(time.Second), p.s.timeoutUnreachable)
	p.eventLocked(now, w.v.ID, EventGiveUp, w.v.ContainersLost, slog.LevelWarn)
	p.notifyLocked()
	if w.v.IdleBehavior != IdleHold {
		w.shutdown(now, fmt.Sprintf("timeout_unreachable: unreachable for %s", d.Round(time.Second)))
	}
}

// answeredLocked is called when a probe of w succeeds: containers written
// off on an instance still in service (a held one) are its own again, and
// the runner's list, applied next, says what became of them.
func (w *instance) answeredLocked() {
	w.keptForCollection = false
	if w.v.State != StateShutdown && w.v.ContainersLost != "" {
		w.v.ContainersLost = ""
		w.viewChanged()
	}
}

// destroyedLocked records an accepted destroy: the provider ended the
// instance, so its containers are gone.
func (w *instance) destroyedLocked() {
	if w.v.ContainersLost == "" {
		w.viewChanged() // set below
	}
	if w.v.ContainersLost == "" && w.v.Preempted {
		w.v.ContainersLost = w.pool.preemptedLostLocked(w) // preempt.go
	}
	if w.v.ContainersLost == "" {
		w.v.ContainersLost = "instance " + string(w.v.ID) + " destroyed (" + w.shutdownReason + ")"
	}
}
