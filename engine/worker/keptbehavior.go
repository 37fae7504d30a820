// Idle behaviours operators set, kept where they outlive the dispatcher's
// process (the store) as well as in the instance's tag, which is written
// later and may be lost to a crash or an unreachable host.

package worker

import "dispatch-tui/cloud"

// BehaviorKeeper keeps the idle behaviour set on each instance by a verb.
// The pool calls it under its lock: it must not call the pool back.
type BehaviorKeeper interface {
	// KeptBehavior returns the behaviour kept for id, if any.
	KeptBehavior(id cloud.InstanceID) (IdleBehavior, bool)
	// KeepBehavior keeps b for id; IdleRun (the default) keeps nothing.
	KeepBehavior(id cloud.InstanceID, b IdleBehavior)
	// KeptInstances returns the ids a behaviour is kept for.
	KeptInstances() []cloud.InstanceID
}

// keepBehaviorLocked keeps w's behaviour, if the pool has a keeper.
func (p *Pool) keepBehaviorLocked(id cloud.InstanceID, b IdleBehavior) {
	if p.opts.Behaviors != nil {
		p.opts.Behaviors.KeepBehavior(id, b)
	}
}

// adoptedBehaviorLocked is the behaviour of an instance found in a
// listing with tagged in its tag: the kept one wins, and then the tag is
// stale (retag).
func (p *Pool) adoptedBehaviorLocked(id cloud.InstanceID, tagged IdleBehavior) (b IdleBehavior, retag bool) {
	if !ValidIdleBehavior(tagged) {
		tagged = IdleRun
	}
	if p.opts.Behaviors == nil {
		return tagged, false
	}
	kept, ok := p.opts.Behaviors.KeptBehavior(id)
	if !ok {
		kept = IdleRun
	}
	return kept, kept != tagged
}

// forgetUnlistedBehaviorsLocked drops what is kept for instances the first
// listing did not find (gone while no dispatcher ran): nothing else would.
func (p *Pool) forgetUnlistedBehaviorsLocked() {
	if p.opts.Behaviors == nil {
		return
	}
	for _, id := range p.opts.Behaviors.KeptInstances() {
		if p.byID[id] == nil {
			p.opts.Behaviors.KeepBehavior(id, IdleRun)
		}
	}
}
