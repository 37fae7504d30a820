// The mapping pass: the queue walked in order onto instances, with pending reasons.

package scheduler

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// passState is the mapping pass's running state.
type passState struct {
	tx        *queue.Tx
	now       time.Time
	ready     bool
	paused    bool
	storeDown bool  // the store cannot write: nothing is started (mapOne)
	createErr error // sticky for the pass once the cloud says no
	atQuota   bool  // createErr is ErrAtQuota: decided once, read per waiting container
	headKept  bool
	position  int
	st        *Stats
	at        int // the index in Active of the container being mapped
	// blockedFound is set once s.blockedAt holds this pass's indices.
	blockedFound bool

	// Quota debts (quota.go): instances shutting down at the start of the
	// pass not yet counted as freed for a waiting container, and the first
	// of s.waitingAtQuota no instance has been freed for yet.
	freeing  int
	owedFrom int
	// Supervisors Locked or Running, and how many may be (0 = no cap).
	supervisors   int
	supervisorCap int
}

// mapQueue walks Locked and Queued containers in order and decides, for
// each, start / wait / create / unlock, leaving a pending reason.
//
// The store orders Locked before Queued; the walk merges the two by
// priority (Locked first among equals), so a lower-priority container
// locked in an earlier pass never comes before a higher-priority one that
// arrived since (see quota.go: at quota, a slot is kept for the higher).
func (s *Scheduler) mapQueue(tx *queue.Tx, now time.Time, ready bool, st *Stats) {
	ps := passState{tx: tx, now: now, ready: ready, paused: tx.Paused(), storeDown: tx.StoreUnavailable(), st: st}
	clear(s.blockedType)
	for i, t := range s.types {
		s.bootFailing[i] = ""
		if err := s.pool.BootFailing(t.Name); err != "" {
			s.bootFailing[i] = (&worker.BootFailingError{Type: t.Name, Err: err}).Error()
		}
	}
	var byState [len(queue.States)]int
	var oldest time.Time // first seen of the longest-waiting container
	active := tx.Active()
	nRunning := len(tx.RunningAtStart())
	queuedAt := s.startQuotaAndSupervisors(&ps, active, nRunning)
	s.startBudgets(st, active[:nRunning])
	// The Running prefix: only Running and finished ones are handled here
	// (a Running container has no pending reason); those requeued earlier
	// in this pass wait their turn below.
	s.requeued = s.requeued[:0]
	for k, c := range active[:nRunning] {
		if k%touchAhead == 0 {
			s.touch(active[k:min(nRunning, k+touchAhead)])
		}
		if !c.State.Final() && c.State != queue.Running {
			// Requeued earlier in this pass: its place is by priority
			// among the waiting ones below, not ahead of them.
			s.requeued = append(s.requeued, placed{c, k})
			continue
		}
		byState[stateIndex(c.State)]++
	}
	slices.SortFunc(s.requeued, func(a, b placed) int {
		if c := cmp.Compare(b.c.Priority, a.c.Priority); c != 0 {
			return c
		}
		return a.c.FirstSeenAt.Compare(b.c.FirstSeenAt)
	})
	locked, queued, requeued := active[nRunning:queuedAt], active[queuedAt:], s.requeued
	li, qi, ri, touchedL, touchedQ := 0, 0, 0, 0, 0
	tail := false // ps.inTail, kept up to date after each mapOne
	for li < len(locked) || qi < len(queued) || ri < len(requeued) {
		if tail && li == len(locked) && ri == len(requeued) {
			// Only Queued ones left, in the tail: most go through
			// walkTail, which stops at the first it leaves to mapOne.
			if n := s.walkTail(&ps, queuedAt+qi, queued[qi:], &oldest); n > 0 {
				byState[stateIndex(queue.Queued)] += n
				if qi += n; qi == len(queued) {
					break
				}
				touchedQ = qi // past what was touched
			}
		}
		if li == touchedL && li < len(locked) {
			touchedL = min(len(locked), li+touchAhead)
			s.touch(locked[li:touchedL])
		}
		if qi == touchedQ && qi < len(queued) {
			touchedQ = min(len(queued), qi+touchAhead)
			s.touch(queued[qi:touchedQ])
		}
		// The next by priority; among equals Locked first, then by
		// first seen.
		var c *queue.Container
		switch {
		case ri < len(requeued) && (li == len(locked) || requeued[ri].c.Priority > locked[li].Priority) &&
			(qi == len(queued) || requeued[ri].c.Priority > queued[qi].Priority ||
				requeued[ri].c.Priority == queued[qi].Priority && !queued[qi].FirstSeenAt.Before(requeued[ri].c.FirstSeenAt)):
			c, ps.at = requeued[ri].c, requeued[ri].i
			ri++
		case qi == len(queued) || (li < len(locked) && locked[li].Priority >= queued[qi].Priority):
			c, ps.at = locked[li], nRunning+li
			li++
		default:
			c, ps.at = queued[qi], queuedAt+qi
			qi++
		}
		switch {
		case c.State.Final():
		case c.State == queue.Running: // adopted earlier in this pass
		default:
			if oldest.IsZero() || c.FirstSeenAt.Before(oldest) {
				oldest = c.FirstSeenAt
			}
			s.mapOne(&ps, c)
			if c.IsSupervisor() {
				ps.countSupervisor(c)
			}
			tail = ps.inTail(s)
		}
		byState[stateIndex(c.State)]++
	}
	s.trimLabelSets()
	for i, n := range byState {
		if n > 0 {
			st.ByState[queue.States[i]] = n
		}
	}
	st.AllocatedNotStart = st.ByState[queue.Locked]
	s.quiet.oldest = oldest
	if !oldest.IsZero() {
		st.LongestWait = max(0, now.Sub(oldest))
	}
}

// touchAhead is how many records mapQueue loads ahead of its walk.
const touchAhead = 64

// touch loads the first cache lines of a run of records in a tight loop,
// so their misses overlap instead of stalling the walk one at a time: at
// 100,000 queued the records are far beyond the cache, and the pass is
// dominated by these loads.
func (s *Scheduler) touch(cs []*queue.Container) {
	n := 0
	for _, c := range cs {
		n += len(c.State)
		if c.FirstSeenAt.IsZero() {
			n++
		}
	}
	s.touchSink = n
}

// inTail reports whether the walk has reached the waiting tail of a pass
// at quota: the head kept its lock, no instance can be created, and none
// has room. From there on, every container mapOne does not stop early for
// waits its turn by position (waitAtQuota); the state lasts for the rest of
// the walk, as room only shrinks. (noTailPath: tests compare walkTail with
// mapOne.)
func (ps *passState) inTail(s *Scheduler) bool {
	return ps.ready && !ps.paused && !ps.storeDown && ps.atQuota && ps.headKept && s.roomySlots == 0 && !s.noTailPath &&
		!s.labels.anyPreemptible // walkTail does not tell preemptible containers apart
}

// walkTail is mapOne for the Queued containers of the waiting tail
// (ps.inTail), cs, from index from of Active on, once no Locked or
// requeued ones are left to merge with them: this is where a pass at
// 100,000 queued spends nearly all its walk. It handles those whose
// outcome is the common one, "position N" — not held, priority above 0, no
// previous attempt blocking a start, no labels, not a supervisor, a shape
// some type fits — through the queue's entries beside the order
// (Tx.WaitInLine), without loading their records, and stops at the first
// other, which it leaves to mapOne; it returns how many it handled.
func (s *Scheduler) walkTail(ps *passState, from int, cs []*queue.Container, oldest *time.Time) int {
	if ps.freeing > 0 { // noteAtQuota has shutdowns to count first
		return 0
	}
	limit := from + len(cs)
	if len(s.blockedStart) > 0 {
		if next := s.nextBlocked(ps, from); next < limit {
			limit = next
		}
	}
	n, first := ps.tx.WaitInLine(from, limit, ps.position, s.fitsByShape(ps.tx))
	if n == 0 {
		return 0
	}
	if oldest.IsZero() || first.Before(*oldest) {
		*oldest = first
	}
	// As mapOne and waitAtQuota past the head, for a Queued container
	// (nothing to unlock).
	ps.position += n
	ps.st.OverQuota += n
	for _, c := range cs[:max(0, min(n, len(s.slots)-len(s.waitingAtQuota)))] {
		s.waitingAtQuota = append(s.waitingAtQuota, quotaWaiter{c: c, priority: c.Priority})
	}
	return n
}

// fitsByShape returns, by the queue's shape id, whether some type fits
// the shape without labels, deciding the shapes new since the last call.
func (s *Scheduler) fitsByShape(tx *queue.Tx) []bool {
	shapes := tx.Shapes()
	s.shapeFits = slices.Grow(s.shapeFits, len(shapes)-len(s.shapeFits))
	for id := len(s.shapeFits); id < len(shapes); id++ {
		s.shapeFits = append(s.shapeFits, id > 0 && len(s.fitFor(shapes[id], 0).candidates) > 0)
	}
	return s.shapeFits
}

// nextBlocked returns the first index ≥ from in Active of a container a
// runner still reports an attempt of (blockedStart), or len(Active).
func (s *Scheduler) nextBlocked(ps *passState, from int) int {
	if !ps.blockedFound {
		ps.blockedFound = true
		s.blockedAt = s.blockedAt[:0]
		for id := range s.blockedStart {
			if c := ps.tx.Get(id); c != nil {
				if i := ps.tx.Index(c); i >= 0 {
					s.blockedAt = append(s.blockedAt, i)
				}
			}
		}
		slices.Sort(s.blockedAt)
	}
	if k, _ := slices.BinarySearch(s.blockedAt, from); k < len(s.blockedAt) {
		return s.blockedAt[k]
	}
	return len(ps.tx.Active())
}

// setPending records the pending reason of c, the container being mapped.
func (ps *passState) setPending(c *queue.Container, p queue.Pending) {
	ps.tx.SetPendingAt(ps.at, c, p)
}

// unlock gives up a Locked container's claim on an instance type.
func (s *Scheduler) unlock(ps *passState, c *queue.Container) {
	if c.State == queue.Locked {
		if err := ps.tx.Unlock(c); err == nil {
			ps.st.Unlocks++
		}
	}
}

// mapOne decides what happens to one waiting (Queued or Locked) container
// and records why it is still waiting if it is: the first of these that
// applies wins: start-up wait, held, priority 0, paused, previous attempt
// still on a runner, a store that cannot write, no type fits, start on an instance with room now,
// wait for a booting instance with room, create an instance, and failing
// that wait for capacity, quota or the create throttle.
func (s *Scheduler) mapOne(ps *passState, c *queue.Container) {
	tx, st := ps.tx, ps.st
	switch {
	case !ps.ready:
		ps.setPending(c, queue.Pending{Code: queue.ReasonStartup})
		return
	case c.Held:
		s.unlock(ps, c)
		ps.setPending(c, queue.Pending{Code: queue.ReasonHeld})
		return
	case c.Priority == 0:
		s.unlock(ps, c)
		ps.setPending(c, queue.Pending{Code: queue.ReasonPriorityZero})
		return
	case ps.paused:
		s.unlock(ps, c)
		ps.setPending(c, queue.Pending{Code: queue.ReasonPaused})
		return
	}
	// Held and priority-0 containers hold no place in the queue: a hold
	// moves everyone behind it up at once.
	ps.position++
	if len(s.blockedStart) > 0 {
		if _, ok := s.blockedStart[c.ID]; ok {
			// A previous attempt is still on a runner (being killed
			// or forgotten).
			ps.setPending(c, queue.Pending{Code: queue.ReasonRequeued})
			return
		}
	}
	if ps.storeDown {
		// A start the store cannot record is not sent, nor is an
		// instance made for one: the container keeps its place (and any
		// lock) until a flush gets through (docs/design.md §10.1).
		ps.setPending(c, queue.Pending{Code: queue.ReasonPosition, N: ps.position})
		return
	}
	f := s.fitForContainer(c)
	if len(f.candidates) == 0 {
		s.unlock(ps, c)
		if f.noLabels {
			ps.setPending(c, queue.Pending{Code: queue.ReasonNoLabels, Arg: noLabelsWhy(c.Scheduling.Constraints)})
			return
		}
		ps.setPending(c, queue.Pending{Code: queue.ReasonNoFit, Arg: f.why})
		return
	}
	if c.IsSupervisor() && s.atSupervisorLimit(ps, c) {
		return
	}
	if ps.atQuota && s.roomySlots == 0 {
		// The waiting tail of a pass at quota: no instance has room for
		// anything (room only shrinks, and none can be created), so steps
		// 1–3 below would find nothing.
		s.waitAtQuota(ps, c, s.types[f.candidates[0]].Name)
		return
	}
	if s.labelBudgets {
		if b := s.overLabelBudget(c, s.cheapestOpen(f.candidates)); b != nil {
			s.waitAtBudget(ps, c, b, s.types[f.candidates[0]].Name)
			return
		}
	}
	rc := c.RuntimeConstraints
	// 1. An instance that can take it now, cheapest type first; but not an
	// idle one whose quota a container waiting ahead of it is owed.
	if i := s.pickAmong(f.candidates, rc, true); i >= 0 {
		if w := s.owedTo(ps, c); w != nil && !s.slots[i].allocated {
			s.freeFor(ps, i, w)
			s.unlock(ps, c)
			ps.setPending(c, queue.Pending{Code: queue.ReasonFreeing, N: w.priority, Arg: w.c.ID})
			return
		}
		s.startOn(ps, c, i)
		if s.labelBudgets {
			s.chargeTo(c, s.slots[i].typ, false)
		}
		return
	}
	// 2. An instance that is booting (or being created) with room for it.
	if i := s.pickAmong(f.candidates, rc, false); i >= 0 {
		sl := &s.slots[i]
		if !s.lockFor(tx, c, s.types[sl.typ].Name) {
			return
		}
		s.place(i, rc)
		if s.labelBudgets {
			s.chargeTo(c, sl.typ, false)
		}
		if msg := s.bootFailing[sl.typ]; msg != "" {
			// A retry of a type that keeps failing: say so, not "booting".
			ps.setPending(c, queue.Pending{Code: queue.ReasonBootFailing, Arg: msg})
			return
		}
		ps.setPending(c, queue.Pending{Code: queue.ReasonBooting, Arg: string(sl.view.ID)})
		return
	}
	// 3. Create an instance, unless the cloud already said no this pass,
	// and none that would take a dollar cap past its limit (budget.go).
	if ps.createErr == nil {
		typ, err := s.create(c, f.candidates, s.blockedType)
		switch {
		case errors.Is(err, errOverBudget):
			s.waitAtBudget(ps, c, s.overBudget(c, s.cheapestOpen(f.candidates)), s.types[f.candidates[0]].Name)
			return
		case err == nil:
			st.Creates++
			s.chargeTo(c, typ, true)
			if !s.lockFor(tx, c, s.types[typ].Name) {
				return
			}
			s.addPending(typ, rc)
			if msg := s.bootFailing[typ]; msg != "" {
				ps.setPending(c, queue.Pending{Code: queue.ReasonBootFailing, Arg: msg})
				return
			}
			ps.setPending(c, queue.Pending{Code: queue.ReasonBooting})
			return
		case errors.Is(err, worker.ErrAtQuota), errors.Is(err, worker.ErrThrottled):
			ps.createErr, ps.atQuota = err, errors.Is(err, worker.ErrAtQuota)
		default:
			// Every candidate type is in a capacity, failed-boot or
			// scoped-quota back-off, or the pool refused for another reason
			// (stopped, unknown type), which is shown as a capacity
			// reason too.
			s.staleUnlock(ps, c)
			var bf *worker.BootFailingError
			if errors.As(err, &bf) {
				ps.setPending(c, queue.Pending{Code: queue.ReasonBootFailing, Arg: err.Error()})
				return
			}
			var cr *worker.CreateRefusedError
			var qb *worker.QuotaBlockedError
			if errors.As(err, &cr) || errors.As(err, &qb) {
				ps.setPending(c, queue.Pending{Code: queue.ReasonCloudRefused, Arg: err.Error()})
				return
			}
			ps.setPending(c, queue.Pending{Code: queue.ReasonCapacity, Arg: err.Error()})
			return
		}
	}
	if ps.atQuota {
		s.waitAtQuota(ps, c, s.types[f.candidates[0]].Name)
		return
	}
	// Throttled: keep whatever lock it has, unless it has gone stale.
	s.staleUnlock(ps, c)
	ps.setPending(c, queue.Pending{Code: queue.ReasonCreating, Arg: s.types[f.candidates[0]].Name})
}

// startOn locks c if need be, records it Running on slot i and queues its
// start, which RunPass sends once the pass is written.
func (s *Scheduler) startOn(ps *passState, c *queue.Container, i int) {
	sl := &s.slots[i]
	tname := s.types[sl.typ].Name
	if c.State == queue.Queued {
		if err := ps.tx.Lock(c, tname); err != nil {
			s.log.Error("lock", "container", c.ID, "err", err)
			return
		}
	}
	if err := ps.tx.Run(c, string(sl.view.ID), tname); err != nil {
		s.log.Error("run", "container", c.ID, "err", err)
		return
	}
	s.place(i, c.RuntimeConstraints)
	ps.position-- // running, so it holds no place in the queue
	s.starts = append(s.starts, startAction{inst: sl.view.ID, spec: runner.Spec{
		ID: c.ID, Command: c.Command, Env: c.Env, Image: c.Image,
		MaxRunTime:  time.Duration(c.Scheduling.MaxRunTime),
		HealthCheck: c.HealthCheck.Runner(),
	}, again: c.Attempts > 1})
}

// waitAtQuota leaves c waiting because no instance can be created: the
// first such container keeps (or takes) a lock on typeName so the next free
// slot goes to it, and is never unlocked for being at quota; the rest are
// unlocked and wait their turn.
func (s *Scheduler) waitAtQuota(ps *passState, c *queue.Container, typeName string) {
	ps.st.AtQuota = true
	ps.st.OverQuota++
	s.noteAtQuota(ps, c)
	if !ps.headKept {
		ps.headKept = true
		if c.State == queue.Queued {
			if err := ps.tx.Lock(c, typeName); err != nil {
				s.log.Error("lock", "container", c.ID, "err", err)
			}
		}
		ps.setPending(c, queue.Pending{Code: queue.ReasonQuota, N: ps.st.QuotaLimit})
		return
	}
	s.unlock(ps, c)
	ps.setPending(c, queue.Pending{Code: queue.ReasonPosition, N: ps.position})
}

// lockFor locks a Queued container to typeName, or moves a Locked one's
// lock there; false if the lock could not be written.
func (s *Scheduler) lockFor(tx *queue.Tx, c *queue.Container, typeName string) bool {
	if c.State == queue.Queued {
		if err := tx.Lock(c, typeName); err != nil {
			s.log.Error("lock", "container", c.ID, "err", err)
			return false
		}
		return true
	}
	tx.SetLockedType(c, typeName)
	return true
}

// create asks the pool for an instance for c of the cheapest candidate
// type not in a capacity or failed-boot back-off, and within c's dollar
// caps: errOverBudget when only those stopped it.
func (s *Scheduler) create(c *queue.Container, candidates []int, blocked []bool) (int, error) {
	var lastErr error
	overBudget := false
	for _, t := range candidates {
		if blocked[t] {
			continue
		}
		if len(s.budgets) > 0 && s.overBudget(c, t) != nil {
			overBudget = true
			continue
		}
		err := s.pool.Create(s.types[t].Name)
		if err == nil {
			s.poolCalls++
			return t, nil
		}
		s.noteRefusal(t, err)
		if typeBlocked(err) {
			blocked[t] = true
			lastErr = err
			continue
		}
		return -1, err
	}
	if overBudget {
		return -1, errOverBudget
	}
	if lastErr == nil {
		lastErr = errors.New("every fitting type is out of capacity")
	}
	return -1, lastErr
}

// cheapestOpen is the first candidate not in a back-off (the first, if all
// are).
func (s *Scheduler) cheapestOpen(candidates []int) int {
	for _, t := range candidates {
		if !s.blockedType[t] {
			return t
		}
	}
	return candidates[0]
}

// typeBlocked reports whether err puts a type in a capacity, failed-boot or
// scoped-quota back-off. At quota (the common refusal, every pass) it allocates
// nothing: errors.As's targets escape, so they are only made past that
// check.
func typeBlocked(err error) bool {
	if errors.Is(err, worker.ErrAtQuota) || errors.Is(err, worker.ErrThrottled) {
		return false
	}
	var cb *worker.CapacityBlockedError
	var bf *worker.BootFailingError
	var qb *worker.QuotaBlockedError // the quota of the type's scope only
	return errors.As(err, &cb) || errors.As(err, &bf) || errors.As(err, &qb)
}

// shutdownUnallocated shuts down idle instances no container wants, so
// that at quota the cloud's capacity goes to types that are needed, and at
// the fleet's dollar cap its dollars (budget.go).
func (s *Scheduler) shutdownUnallocated(atQuota bool) {
	why, what := "at quota", "quota"
	if !atQuota {
		why, what = "at budget", "dollars"
	}
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.allocated || sl.view.ID == "" || sl.view.State != worker.StateIdle || sl.view.IdleBehavior != worker.IdleRun {
			continue
		}
		s.poolCalls++
		if sl.freeFor != "" {
			s.pool.Shutdown(sl.view.ID, why+": freeing its "+what+" for "+sl.freeFor)
			continue
		}
		s.pool.Shutdown(sl.view.ID, why+": idle and not needed by the queue")
	}
}

// stateIndex is s's index in queue.States, for counting without a map.
func stateIndex(s queue.State) int {
	switch s {
	case queue.Queued:
		return 0
	case queue.Locked:
		return 1
	case queue.Running:
		return 2
	case queue.Complete:
		return 3
	}
	return 4
}
