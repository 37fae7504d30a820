// The attached console's copy of the instances, kept current by the
// changes the daemon sends (GET /v1/instances?changed_since,
// docs/design.md §9.1) instead of reading them all again.

package backend

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"dispatch-tui/engine/view"
)

// instCopy is a Remote's copy of the daemon's instance rows: read whole
// once, then only what changed. Each change makes a new list (a snapshot
// keeps the one it was given, unchanged); no change keeps the same list.
type instCopy struct {
	mu   sync.Mutex // one reader of changes at a time; guards the rest
	gen  uint64     // 0 before the first read
	list []view.Instance
}

// instances returns the current instance rows: all of them read again
// when there is no copy yet or the daemon no longer knows its generation
// (410), else the copy with the changes since applied.
func (r *Remote) instances(ctx context.Context) ([]view.Instance, error) {
	ic := &r.insts
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.gen != 0 {
		list, gen, err := r.instanceChanges(ctx, ic.gen, ic.list)
		if view.KindOf(err) != view.KindGone {
			if err != nil {
				return nil, err
			}
			ic.list, ic.gen = list, gen
			return list, nil
		}
		// The daemon restarted, or this console fell too far behind.
	}
	list, gen, err := r.instanceChanges(ctx, 0, nil)
	if err != nil {
		return nil, err
	}
	ic.list, ic.gen = list, gen
	return list, nil
}

// instanceChanges reads every page of the changes after since and applies
// them to old, returning the new list (old itself when nothing changed)
// and the generation it is current at. The pages are read whole before
// any is applied: a failed read leaves old as it was.
func (r *Remote) instanceChanges(ctx context.Context, since uint64, old []view.Instance) ([]view.Instance, uint64, error) {
	changed := map[view.InstanceID]view.Instance{}
	gone := map[view.InstanceID]bool{}
	var creating []view.Instance
	newCreates := since == 0 // a first read brings the creates in flight, if any
	gen := since
	for {
		ch, err := r.c.InstanceChanges(ctx, gen, r.pageSize, 0)
		if err != nil {
			return nil, 0, err
		}
		for _, id := range ch.Removed {
			if id == "" { // the creates in flight, which come whole
				newCreates, creating = true, nil
				continue
			}
			gone[view.InstanceID(id)] = true
			delete(changed, view.InstanceID(id))
		}
		for _, v := range ch.Items {
			if v.ID == "" {
				creating = append(creating, v)
				continue
			}
			delete(gone, v.ID) // gone, then listed again
			changed[v.ID] = v
		}
		gen = ch.Generation
		if !ch.More {
			break
		}
	}
	if len(changed) == 0 && len(gone) == 0 && !newCreates && since != 0 {
		return old, gen, nil
	}
	out := make([]view.Instance, 0, len(old)+len(changed)+len(creating))
	for _, v := range old {
		if v.ID == "" {
			if !newCreates {
				out = append(out, v)
			}
			continue
		}
		if gone[v.ID] {
			continue
		}
		if nv, ok := changed[v.ID]; ok {
			v = nv
			delete(changed, v.ID)
		}
		out = append(out, v)
	}
	for _, v := range changed { // new ones
		out = append(out, v)
	}
	if newCreates {
		out = append(out, creating...)
	}
	slices.SortStableFunc(out, func(a, b view.Instance) int {
		if c := cmp.Compare(listGroup(&a), listGroup(&b)); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, gen, nil
}

// listGroup orders the rows as the daemon lists them: its instances, the
// creates in flight, the hosts refused, other dispatchers' instances.
func listGroup(v *view.Instance) int {
	switch {
	case v.ID == "":
		return 1
	case v.State == view.InstanceRefused:
		return 2
	case v.State == view.InstanceForeign:
		return 3
	}
	return 0
}

// instWatchFrom is the generation the instance watch starts from: the
// copy's, once there is one.
func (r *Remote) instWatchFrom() (uint64, error) {
	r.insts.mu.Lock()
	defer r.insts.mu.Unlock()
	if r.insts.gen == 0 {
		return 0, errNoCopy
	}
	return r.insts.gen, nil
}
