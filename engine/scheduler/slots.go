// The per-pass table of instances and the room left on each.

package scheduler

import (
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// slot is one instance as a pass sees it: what it can take and what the
// pass has put on it so far.
type slot struct {
	view      *worker.InstanceView
	typ       int
	ready     bool // idle/running with behaviour run: can start now
	waiting   bool // booting/unknown/pending with behaviour run: will be able to
	count     int
	used      queue.Constraints
	allocated bool
	// roomy: in the roomy list of its mode and type (it has room for
	// some container, and is ready or waiting).
	roomy bool
	// freeFor is the container waiting at quota this idle instance is
	// being shut down for, "" if none.
	freeFor string
}

// indexInstances builds the per-pass slot table and per-type lists.
func (s *Scheduler) indexInstances() {
	clear(s.byID)
	s.slots = s.slots[:0]
	s.roomySlots = 0
	for m := range 2 {
		for i := range s.types {
			s.roomy[m][i] = s.roomy[m][i][:0]
			s.roomyHead[m][i] = 0
			s.roomyByCount[m][i] = s.roomyByCount[m][i][:0]
			s.failed[m][i] = false
		}
	}
	for i := range s.views {
		v := &s.views[i]
		typ, ok := s.typeIndex[v.Type]
		if !ok {
			typ = -1
		}
		sl := slot{view: v, typ: typ, count: len(v.Containers)}
		if v.IdleBehavior == worker.IdleRun || v.IdleBehavior == "" {
			switch v.State {
			case worker.StateIdle, worker.StateRunning:
				sl.ready = !v.ProbeFailing
			case worker.StateBooting, worker.StateUnknown:
				sl.waiting = true
			}
		}
		sl.allocated = sl.count > 0
		if v.ID != "" {
			s.byID[v.ID] = len(s.slots)
		}
		s.slots = append(s.slots, sl)
	}
}

// finishIndex adds the resource use of Running containers (walked first in
// scheduling order) and fills the per-type lists.
func (s *Scheduler) finishIndex() {
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.typ < 0 || !(sl.ready || sl.waiting) {
			continue
		}
		if s.hasRoom(sl, queue.Constraints{}) {
			s.join(i)
		}
	}
}

// join adds slot i, which has room, to the roomy list of its mode and type.
// Slots join in ascending index order (finishIndex, then addPending), so
// each list stays sorted by slot index.
func (s *Scheduler) join(i int) {
	sl := &s.slots[i]
	s.roomy[mode(sl.ready)][sl.typ] = append(s.roomy[mode(sl.ready)][sl.typ], i)
	s.markRoomy(i)
}

// markRoomy counts slot i, whose list entry is in place, as roomy.
func (s *Scheduler) markRoomy(i int) {
	sl := &s.slots[i]
	sl.roomy = true
	s.countRoomy(mode(sl.ready), sl.typ, sl.count, 1)
	s.roomySlots++
}

// leave takes slot i out of the roomy set (it filled up, or is withheld):
// its list entry is dropped lazily by pick.
func (s *Scheduler) leave(i int) {
	sl := &s.slots[i]
	if !sl.roomy {
		return
	}
	sl.roomy = false
	s.countRoomy(mode(sl.ready), sl.typ, sl.count, -1)
	s.roomySlots--
}

// countRoomy adds d to the number of roomy slots of mode m and type typ
// holding n containers.
func (s *Scheduler) countRoomy(m, typ, n, d int) {
	bc := s.roomyByCount[m][typ]
	for len(bc) <= n {
		bc = append(bc, 0)
	}
	bc[n] += d
	for len(bc) > 0 && bc[len(bc)-1] == 0 {
		bc = bc[:len(bc)-1]
	}
	s.roomyByCount[m][typ] = bc
}

// addUse adds a container's needs (with the per-container RAM reserve) to u.
func addUse(u *queue.Constraints, rc queue.Constraints, reserve int64) {
	rc.RAM = addSize(rc.RAM, reserve)
	*u = addConstraints(*u, rc)
}

// hasRoom reports whether sl can take one more container needing rc.
func (s *Scheduler) hasRoom(sl *slot, rc queue.Constraints) bool {
	if s.maxPer > 0 && sl.count >= s.maxPer {
		return false
	}
	t := &s.types[sl.typ]
	return addCount(sl.used.VCPUs, rc.VCPUs) <= t.VCPUs &&
		addSize(addSize(sl.used.RAM, rc.RAM), s.reserveRAM) <= t.RAM &&
		addSize(sl.used.Scratch, rc.Scratch) <= t.Scratch &&
		addCount(sl.used.GPUs, rc.GPUs) <= t.GPUs
}

// pick finds the best instance of type typ with room for rc: ready ones
// (pack: busiest; spread: least busy; ties to the lowest slot index) when
// wantReady, else waiting ones.
//
// It walks only the slots that still have room for something, in slot
// order, and stops at the first with room for rc whose count is the best
// any roomy slot has: none later can beat it. With one container per
// instance (the default) that is the first roomy slot, so a pass's starts
// cost O(starts + instances), not O(starts × instances).
func (s *Scheduler) pick(typ int, rc queue.Constraints, wantReady bool) int {
	m := mode(wantReady)
	bc := s.roomyByCount[m][typ]
	if len(bc) == 0 { // no roomy slot (bc has no trailing zeros)
		return -1
	}
	if s.failed[m][typ] && geq(rc, s.failNeed[m][typ]) {
		return -1
	}
	// The best count among roomy slots.
	target := len(bc) - 1
	if s.spread {
		target = 0
		for bc[target] == 0 {
			target++
		}
	}
	list := s.roomy[m][typ]
	head := s.roomyHead[m][typ]
	live := head // entries before live are all dropped
	best, whole := -1, true
	for k := head; k < len(list); k++ {
		i := list[k]
		sl := &s.slots[i]
		if !sl.roomy {
			if live == k {
				live = k + 1
			}
			continue
		}
		if !s.hasRoom(sl, rc) {
			continue
		}
		if best < 0 {
			best = i
		} else if b := &s.slots[best]; (s.spread && sl.count < b.count) || (!s.spread && sl.count > b.count) {
			best = i
		}
		if sl.count == target {
			whole = false
			break
		}
	}
	s.roomyHead[m][typ] = live
	if whole {
		// The walk read every entry anyway: drop those that lost their room.
		j := live
		for _, i := range list[live:] {
			if s.slots[i].roomy {
				list[j] = i
				j++
			}
		}
		s.roomy[m][typ] = list[:j]
	}
	if best < 0 {
		if !s.failed[m][typ] || geq(s.failNeed[m][typ], rc) {
			s.failNeed[m][typ] = rc
		}
		s.failed[m][typ] = true
	}
	return best
}

// mode is the first index of roomy, failNeed and failed.
func mode(ready bool) int {
	if ready {
		return 0
	}
	return 1
}

// geq reports whether a needs at least as much as b of every resource.
func geq(a, b queue.Constraints) bool {
	return a.VCPUs >= b.VCPUs && a.RAM >= b.RAM && a.Scratch >= b.Scratch && a.GPUs >= b.GPUs
}

// place puts a container needing rc on slot i.
func (s *Scheduler) place(i int, rc queue.Constraints) {
	sl := &s.slots[i]
	wasRoomy := sl.roomy
	s.leave(i)
	sl.count++
	addUse(&sl.used, rc, s.reserveRAM)
	sl.allocated = true
	if wasRoomy && s.hasRoom(sl, queue.Constraints{}) {
		// Still roomy: only its count moves (its list entry stays).
		s.markRoomy(i)
	}
}

// pickAmong is pick over the candidate types, cheapest first.
func (s *Scheduler) pickAmong(candidates []int, rc queue.Constraints, wantReady bool) int {
	for _, t := range candidates {
		if i := s.pick(t, rc, wantReady); i >= 0 {
			return i
		}
	}
	return -1
}

// addPending adds a slot for an instance just requested from the cloud, so
// later containers in this pass can wait for it too when it has room.
func (s *Scheduler) addPending(typ int, rc queue.Constraints) {
	moves := len(s.views) == cap(s.views)
	s.views = append(s.views, worker.InstanceView{Instance: view.Instance{Type: s.types[typ].Name, State: worker.StateBooting, IdleBehavior: worker.IdleRun}})
	if moves {
		// s.views moved: re-point every slot. Only when it moves (a
		// doubling), or a pass creating many instances at 10,000 would
		// re-point them all on every create.
		for i := range s.slots {
			s.slots[i].view = &s.views[i]
		}
	}
	sl := slot{view: &s.views[len(s.views)-1], typ: typ, waiting: true}
	s.slots = append(s.slots, sl)
	i := len(s.slots) - 1
	s.join(i)
	s.place(i, rc)
	// Room grew: a size that found no waiting slot of this type before
	// may fit the new one, so the short-circuit no longer holds.
	s.failed[1][typ] = false
}
