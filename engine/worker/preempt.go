// Preemptible instances taken back by the provider, and remembering them.

package worker

import (
	"log/slog"
	"time"

	"dispatch-tui/cloud"
)

// Preemptible instances (docs/design.md §6, Spot): the provider may take
// one back at any time. Either its driver says so in a listing
// (cloud.Interruptible), and the pool destroys it, or it simply vanishes
// from the listing. Once it is destroyed or gone, its containers are
// requeued without spending an attempt: the interruption was not their
// failure. Not before: until then they may still run there.

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
// interruption: it is shut down, hold or not, and once its destroy is
// accepted (the provider ended it: its containers are certainly gone, so
// none runs twice) its containers are written off with the interruption
// as the reason, to be requeued without an attempt spent.
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
	w.rowChanged()
	text := "instance " + string(w.v.ID) + " was interrupted (spot): " + why
	p.rememberPreemptedLocked(w.v.ID, text, now)
	p.eventLocked(now, w.v.ID, EventPreempted, text, slog.LevelWarn)
	p.notifyLocked()
	w.shutdown(now, "spot interruption: "+why)
}

// preemptedLostLocked is ContainersLost for a preempted instance whose
// destroy was accepted.
func (p *Pool) preemptedLostLocked(w *instance) string {
	if e, ok := p.preempted[w.v.ID]; ok {
		return e.why
	}
	return "instance " + string(w.v.ID) + " was interrupted (spot)"
}

// vanishedPreemptedLocked is called for an instance about to be removed
// because the listing no longer has it. For one the provider took back (an
// interruption reported earlier, or a preemptible type's instance that
// vanished while it may hold containers) it remembers why for
// PreemptedInstance and reports true, after emitting the event.
func (p *Pool) vanishedPreemptedLocked(w *instance, now time.Time) bool {
	why := p.preemptedLostLocked(w)
	if !w.v.Preempted {
		if !w.itype.Preemptible || w.v.State == StateShutdown || !w.mayHoldContainers() {
			return false
		}
		why = "instance " + string(w.v.ID) + " was interrupted (spot): it vanished from the provider's listing"
		p.eventLocked(now, w.v.ID, EventPreempted, why, slog.LevelWarn)
	} else {
		p.eventLocked(now, w.v.ID, EventState, "gone after a spot interruption", slog.LevelInfo)
	}
	p.rememberPreemptedLocked(w.v.ID, why, now)
	return true
}

// rememberPreemptedLocked records why the provider took id back, dropping
// what is older than preemptedKeep.
func (p *Pool) rememberPreemptedLocked(id cloud.InstanceID, why string, now time.Time) {
	if p.preempted == nil {
		p.preempted = map[cloud.InstanceID]preemption{}
	}
	for old, e := range p.preempted {
		if now.Sub(e.at) > preemptedKeep {
			delete(p.preempted, old)
		}
	}
	p.preempted[id] = preemption{why: why, at: now}
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
