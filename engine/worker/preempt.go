package worker

import (
	"log/slog"
	"time"

	"dispatch-tui/cloud"
)

// Preemptible instances (docs/design.md §6, Spot): the provider may take
// one back at any time. Either its driver says so in a listing
// (cloud.Interruptible), and the pool writes its containers off and
// destroys it, or it simply vanishes from the listing. Its containers are
// then requeued without spending an attempt: the interruption was not
// their failure. A container there is certainly ended: the provider
// reclaims the whole machine.

// preemption is a removed instance the provider took back.
type preemption struct {
	why string
	at  time.Time
}

// preemptedKeep bounds how long a removed preempted instance is
// remembered: long enough for the scheduler to requeue its containers,
// which it does once the pool is ready and no instance is unknown.
const preemptedKeep = time.Hour

// checkInterruptedLocked acts on a listed instance whose driver reports an
// interruption: its containers are written off (requeued without an
// attempt spent) and it is shut down, hold or not.
func (p *Pool) checkInterruptedLocked(w *instance, now time.Time) {
	if w.v.Preempted {
		return
	}
	why, ok := cloud.Interrupted(w.inst)
	if !ok {
		return
	}
	if why == "" {
		why = "interrupted"
	}
	w.v.Preempted = true
	w.v.ContainersLost = "instance " + string(w.v.ID) + " was interrupted (spot): " + why
	p.eventLocked(now, w.v.ID, EventPreempted, w.v.ContainersLost, slog.LevelWarn)
	p.notifyLocked()
	w.shutdown(now, "spot interruption: "+why)
}

// vanishedPreemptedLocked is called for an instance about to be removed
// because the listing no longer has it. For one the provider took back (an
// interruption reported earlier, or a preemptible type's instance that
// vanished while it may hold containers) it remembers why for
// PreemptedInstance and reports true, after emitting the event.
func (p *Pool) vanishedPreemptedLocked(w *instance, now time.Time) bool {
	why := w.v.ContainersLost
	if !w.v.Preempted {
		if !w.itype.Preemptible || w.v.State == StateShutdown || !w.mayHoldContainers() {
			return false
		}
		why = "instance " + string(w.v.ID) + " was interrupted (spot): it vanished from the provider's listing"
		p.eventLocked(now, w.v.ID, EventPreempted, why, slog.LevelWarn)
	} else {
		p.eventLocked(now, w.v.ID, EventState, "gone after a spot interruption", slog.LevelInfo)
	}
	if p.preempted == nil {
		p.preempted = map[cloud.InstanceID]preemption{}
	}
	for id, e := range p.preempted {
		if now.Sub(e.at) > preemptedKeep {
			delete(p.preempted, id)
		}
	}
	p.preempted[w.v.ID] = preemption{why: why, at: now}
	return true
}

// PreemptedInstance says why the provider took back id, an instance no
// longer in the pool ("" if it did not, or that was over an hour ago): the
// scheduler requeues the containers recorded there without spending an
// attempt.
func (p *Pool) PreemptedInstance(id cloud.InstanceID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.preempted[id].why
}
