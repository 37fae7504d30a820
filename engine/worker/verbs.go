// The pool's verbs: shutdown, kill, idle behaviour.

package worker

import (
	"fmt"
	"log/slog"
	"time"

	"dispatch-tui/cloud"
)

func (p *Pool) startTagsLocked(w *instance, now time.Time) {
	if !p.cloudAllowedLocked(now) {
		return
	}
	w.tagsInFlight = true
	b := w.v.IdleBehavior
	inst := w.inst
	if !p.goLocked(func() {
		tags := inst.Tags().Clone()
		tags[cloud.TagIdleBehavior] = string(b)
		err := p.mayAct()
		if err == nil {
			err = inst.SetTags(p.ctx, tags)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		w.tagsInFlight = false
		if err != nil && p.canceled() {
			return
		}
		p.countOpLocked("set_tags", err)
		if err != nil {
			if w.v.State == StateShutdown || w.removed {
				// Draining an idle instance shuts it down at once, so
				// the destroy often wins the race with this call: the
				// tag no longer matters, and the failure is no cloud
				// error worth an event.
				p.log.Debug("set tags on an instance shutting down", "instance", string(w.v.ID), "error", err.Error())
				return
			}
			p.cloudErrLocked(p.clk.Now(), w.v.ID, "set tags", err)
			return
		}
		if w.v.IdleBehavior == b {
			w.tagsDirty = false
		}
	}) {
		w.tagsInFlight = false
	}
}

// Shutdown destroys an idle instance on the scheduler's request. It refuses
// (false) held, non-idle and unknown instances.
func (p *Pool) Shutdown(id cloud.InstanceID, reason string) bool {
	p.mu.Lock()
	w := p.byID[id]
	if w == nil || w.v.IdleBehavior == IdleHold || w.v.State != StateIdle || len(w.starts) > 0 || len(w.v.Containers) > 0 {
		p.mu.Unlock()
		return false
	}
	w.shutdown(p.clk.Now(), reason)
	p.mu.Unlock()
	p.flush()
	return true
}

// KillInstance destroys an instance now, whatever its state and idle
// behaviour.
func (p *Pool) KillInstance(id cloud.InstanceID, reason string) (InstanceView, error) {
	p.mu.Lock()
	w := p.byID[id]
	if w == nil {
		err := p.foreignErrLocked(id)
		p.mu.Unlock()
		return InstanceView{}, err
	}
	if reason == "" {
		reason = "operator request"
	}
	w.shutdown(p.clk.Now(), "killed: "+reason)
	if w.v.ContainersLost == "" {
		// The operator's word: requeue now, even if an old attempt may
		// still run on an instance that cannot be reached.
		w.v.ContainersLost = "instance " + string(id) + " killed: " + reason
		w.viewChanged()
	}
	p.publishLocked()
	v := w.view()
	p.mu.Unlock()
	p.flush()
	return v, nil
}

// SetIdleBehavior sets an instance's idle behaviour (hold, drain, run). It
// takes effect at once; the instance's tags are updated asynchronously (and
// retried until they are).
func (p *Pool) SetIdleBehavior(id cloud.InstanceID, b IdleBehavior) (InstanceView, error) {
	if !ValidIdleBehavior(b) {
		return InstanceView{}, fmt.Errorf("invalid idle behavior %q (run, hold or drain)", b)
	}
	p.mu.Lock()
	w := p.byID[id]
	if w == nil {
		err := p.foreignErrLocked(id)
		p.mu.Unlock()
		return InstanceView{}, err
	}
	if w.v.IdleBehavior != b {
		now := p.clk.Now()
		old := w.v.IdleBehavior
		w.v.IdleBehavior = b
		w.rowChanged()
		p.keepBehaviorLocked(id, b)
		p.eventLocked(now, id, EventIdleBehavior, fmt.Sprintf("idle behavior %s -> %s", old, b), slog.LevelInfo)
		p.notifyLocked()
		if w.v.State != StateShutdown {
			w.tagsDirty = true
			if !w.tagsInFlight {
				p.startTagsLocked(w, now)
			}
		}
		p.publishLocked()
	}
	v := w.view()
	p.mu.Unlock()
	p.flush()
	return v, nil
}
