// Instances another dispatcher owns: shown, never touched.

package worker

import (
	"slices"
	"strings"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/view"
)

// StateForeign is shown for an instance listed with another dispatcher's
// owner tag: like StateRefused, a display value and not a state of the
// pool's state machine (states.txt), as the pool never adopts, probes,
// kills or destroys such an instance; the row only tells the operator
// whose it is.
const StateForeign = view.InstanceForeign

// ForeignError answers a verb on another dispatcher's instance.
type ForeignError struct {
	ID    cloud.InstanceID
	Owner string
}

func (e *ForeignError) Error() string {
	return "instance " + string(e.ID) + " belongs to dispatcher " + e.Owner + "; not touched"
}

// ErrorKind implements view.Kinded: another's instance takes no verbs.
func (e *ForeignError) ErrorKind() view.Kind { return view.KindConflict }

// noteForeignLocked remembers inst, listed with another dispatcher's
// owner tag, for display, logging it when first seen with that owner. An
// instance with no owner tag at all is no dispatcher's: it is not shown.
func (p *Pool) noteForeignLocked(inst cloud.Instance) {
	owner := inst.Tags()[cloud.TagOwner]
	if owner == "" {
		return
	}
	if old, had := p.foreign[inst.ID()]; had && old.Tags()[cloud.TagOwner] == owner {
		p.foreign[inst.ID()] = inst
		return
	}
	p.foreign[inst.ID()] = inst
	p.log.Info("instance owned by another dispatcher; not touched", "instance", string(inst.ID()), "owner", owner)
	p.notifyLocked()
}

// pruneForeignLocked forgets the foreign instances no longer listed, or
// no longer foreign.
func (p *Pool) pruneForeignLocked(insts []cloud.Instance) {
	if len(p.foreign) == 0 {
		return
	}
	listed := make(map[cloud.InstanceID]bool, len(insts))
	for _, inst := range insts {
		listed[inst.ID()] = true
	}
	for id := range p.foreign {
		if _, ours := p.byID[id]; !listed[id] || ours {
			delete(p.foreign, id)
			p.notifyLocked()
		}
	}
}

// foreignErrLocked is the error for a verb on id when it is another
// dispatcher's instance, else ErrNotFound (the pool does not hold id).
func (p *Pool) foreignErrLocked(id cloud.InstanceID) error {
	if inst, ok := p.foreign[id]; ok {
		return &ForeignError{ID: id, Owner: inst.Tags()[cloud.TagOwner]}
	}
	return ErrNotFound
}

// ForeignInstances returns a row (State StateForeign, LastError "owned by
// <owner>") for each instance of the last listing that carries another
// dispatcher's owner tag, by ID. The scheduler never sees them: they are
// not in Instances.
func (p *Pool) ForeignInstances() []InstanceView {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.foreignViewsLocked()
}

// foreignViewsLocked is ForeignInstances (p.mu held).
func (p *Pool) foreignViewsLocked() []InstanceView {
	out := make([]InstanceView, 0, len(p.foreign))
	for id, inst := range p.foreign {
		tags := inst.Tags()
		v := InstanceView{
			Instance: view.Instance{
				ID:           id,
				Type:         tags[cloud.TagInstanceType],
				ProviderType: inst.ProviderType(),
				Address:      inst.Address(),
				State:        StateForeign,
				IdleBehavior: IdleBehavior(tags[cloud.TagIdleBehavior]),
				Containers:   []string{},
				LastError:    "owned by " + tags[cloud.TagOwner],
			},
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b InstanceView) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}
