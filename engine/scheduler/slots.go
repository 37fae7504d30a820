package scheduler

import (
	"dispatch-tui/engine/queue"
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
	// freeFor is the container waiting at quota this idle instance is
	// being shut down for, "" if none.
	freeFor string
}

// indexInstances builds the per-pass slot table and per-type lists.
func (s *Scheduler) indexInstances() {
	clear(s.byID)
	s.slots = s.slots[:0]
	for i := range s.byType {
		s.byType[i] = s.byType[i][:0]
		for m := range 2 {
			s.freeCount[m][i] = 0
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
		s.byType[sl.typ] = append(s.byType[sl.typ], i)
		if s.hasRoom(sl, queue.Constraints{}) {
			s.freeCount[mode(sl.ready)][sl.typ]++
		}
	}
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
// (pack: busiest; spread: least busy) when wantReady, else waiting ones.
func (s *Scheduler) pick(typ int, rc queue.Constraints, wantReady bool) int {
	m := mode(wantReady)
	if s.freeCount[m][typ] == 0 {
		return -1
	}
	if s.failed[m][typ] && geq(rc, s.failNeed[m][typ]) {
		return -1
	}
	best := -1
	for _, i := range s.byType[typ] {
		sl := &s.slots[i]
		if sl.ready != wantReady || !s.hasRoom(sl, rc) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := &s.slots[best]
		if (s.spread && sl.count < b.count) || (!s.spread && sl.count > b.count) {
			best = i
		}
	}
	if best < 0 {
		if !s.failed[m][typ] || geq(s.failNeed[m][typ], rc) {
			s.failNeed[m][typ] = rc
		}
		s.failed[m][typ] = true
	}
	return best
}

// mode is the first index of freeCount, failNeed and failed.
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
	hadRoom := s.hasRoom(sl, queue.Constraints{})
	sl.count++
	addUse(&sl.used, rc, s.reserveRAM)
	sl.allocated = true
	if hadRoom && !s.hasRoom(sl, queue.Constraints{}) {
		s.freeCount[mode(sl.ready)][sl.typ]--
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
	s.views = append(s.views, worker.InstanceView{Type: s.types[typ].Name, State: worker.StateBooting, IdleBehavior: worker.IdleRun})
	// s.views may have moved: re-point every slot.
	for i := range s.slots {
		s.slots[i].view = &s.views[i]
	}
	sl := slot{view: &s.views[len(s.views)-1], typ: typ, waiting: true}
	s.slots = append(s.slots, sl)
	i := len(s.slots) - 1
	s.byType[typ] = append(s.byType[typ], i)
	s.freeCount[1][typ]++
	s.place(i, rc)
}
