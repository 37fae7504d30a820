// The verb a key chose, typed once where the key is read: what the
// dialogs explain and what the backend is sent.

package tui

import (
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/keys"
)

// chosen is a verb chosen by a key: an instance verb, or a container verb
// (view.ContainerPriority with step +1 or -1 for the priority keys).
type chosen struct {
	inst view.InstanceVerb
	ctr  view.ContainerVerb
	step int
}

// instanceVerbs are the instance verbs of the verb keys.
var instanceVerbs = map[string]view.InstanceVerb{
	keys.Hold:  view.InstanceHold,
	keys.Drain: view.InstanceDrain,
	keys.Run:   view.InstanceRun,
	keys.Kill:  view.InstanceKill,
}

// choose is the verb key act chooses on rows of view v; release is for a
// hold key on containers that are all held already. ok is false for a key
// that chooses no verb there.
func choose(act string, v viewID, release bool) (c chosen, ok bool) {
	if v == vInstances {
		c.inst, ok = instanceVerbs[act]
		return c, ok
	}
	switch act {
	case keys.Hold:
		c.ctr = view.ContainerHold
		if release {
			c.ctr = view.ContainerRelease
		}
	case keys.Kill:
		c.ctr = view.ContainerKill
	case keys.PrioUp:
		c.ctr, c.step = view.ContainerPriority, 1
	case keys.PrioDown:
		c.ctr, c.step = view.ContainerPriority, -1
	default:
		return c, false
	}
	return c, true
}

// view is the view whose rows c applies to.
func (c chosen) view() viewID {
	if c.inst != 0 {
		return vInstances
	}
	return vContainers
}

// label names c for people: the verb's name, or what a priority step
// does (the flash of "priority -1" read as "set to -1").
func (c chosen) label() string {
	switch {
	case c.inst != 0:
		return c.inst.String()
	case c.ctr == view.ContainerPriority && c.step > 0:
		return "raise the priority"
	case c.ctr == view.ContainerPriority:
		return "lower the priority"
	}
	return c.ctr.String()
}
