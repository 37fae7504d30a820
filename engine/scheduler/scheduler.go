// Package scheduler maps queued containers onto instances (DESIGN §5): the
// mapping pass, the reconcile pass and the stale-lock fixer, with pending
// reasons for every container that is not running.
//
// A pass walks the queue once in scheduling order. Per-type instance lists,
// a per-shape cache of fitting types, and short-circuits once a type or the
// cloud is exhausted keep it O(queued + instances), not O(queued × instances).
package scheduler

import (
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// Pool is what the scheduler needs from the worker pool.
type Pool interface {
	Instances(buf []worker.InstanceView) []worker.InstanceView
	Ready() bool
	Create(typeName string) error
	StartContainer(id cloud.InstanceID, spec runner.Spec) error
	KillContainer(id cloud.InstanceID, containerID string) bool
	ForgetContainer(id cloud.InstanceID, containerID string)
	TakeStartFailures() []worker.StartFailure
	Shutdown(id cloud.InstanceID, reason string) bool
	Quota() (limit int, atQuota bool)
}

// Stats describe the last pass, for metrics and the summary.
type Stats struct {
	Duration          time.Duration
	ByState           map[queue.State]int
	Starts            int
	Creates           int
	Unlocks           int
	Kills             int
	LongestWait       time.Duration // oldest Queued/Locked container's wait
	AllocatedNotStart int           // Locked containers
	OverQuota         int           // containers not allocated because of quota
	AtQuota           bool
	QuotaLimit        int
}

// Scheduler runs passes. It is driven from one goroutine (the engine's
// loop); it keeps scratch buffers between passes to avoid allocation.
type Scheduler struct {
	cfg     *config.Config
	queue   *queue.Queue
	pool    Pool
	clock   clock.Clock
	log     *slog.Logger
	started time.Time

	types      []cloud.InstanceType // sorted by price
	typeIndex  map[string]int
	fitCache   map[queue.Constraints]fit
	fitSmall   [64]fitSlot
	reserveRAM int64
	maxPer     int
	spread     bool

	// scratch, reused every pass
	views  []worker.InstanceView
	slots  []slot
	byID   map[cloud.InstanceID]int
	byType [][]int
	// Per type, indexed [mode][type] with mode 0 = ready, 1 = waiting: how
	// many instances have any room, and the smallest need that found no
	// room this pass (anything at least as big fails too: room only shrinks).
	freeCount   [2][]int
	failNeed    [2][]queue.Constraints
	failed      [2][]bool
	blockedType []bool
	reported    map[string]struct{}
	// blockedStart holds non-Running containers some runner still reports
	// (running, or exited and not yet forgotten): they must not start
	// until that attempt is gone.
	blockedStart map[string]struct{}
	adopted      []*queue.Container
	starts       []startAction
	forgets      []forgetAction
	revert       []worker.StartFailure
	touchSink    int // keeps touch's loads from being optimised away
}

type fit struct {
	candidates []int // type indices within max_price_factor of the cheapest, by price
	why        string
}

type slot struct {
	view      *worker.InstanceView
	typ       int
	ready     bool // idle/running with behaviour run: can start now
	waiting   bool // booting/unknown/pending with behaviour run: will be able to
	count     int
	used      queue.Constraints
	allocated bool
}

type startAction struct {
	inst cloud.InstanceID
	spec runner.Spec
}

// New returns a scheduler for the config's types and limits.
func New(cfg *config.Config, q *queue.Queue, pool Pool, clk clock.Clock, log *slog.Logger) *Scheduler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{
		cfg: cfg, queue: q, pool: pool, clock: clk, log: log,
		started:      clk.Now(),
		types:        cfg.InstanceTypes,
		typeIndex:    map[string]int{},
		fitCache:     map[queue.Constraints]fit{},
		reserveRAM:   cfg.Dispatcher.ReserveExtraRAM,
		maxPer:       cfg.Dispatcher.MaxContainersPerInstance,
		spread:       cfg.Dispatcher.SchedulerProfile == "spread",
		byID:         map[cloud.InstanceID]int{},
		reported:     map[string]struct{}{},
		blockedStart: map[string]struct{}{},
	}
	for i, t := range s.types {
		s.typeIndex[t.Name] = i
	}
	s.byType = make([][]int, len(s.types))
	for m := range 2 {
		s.freeCount[m] = make([]int, len(s.types))
		s.failNeed[m] = make([]queue.Constraints, len(s.types))
		s.failed[m] = make([]bool, len(s.types))
	}
	s.blockedType = make([]bool, len(s.types))
	return s
}

// Fits reports whether some configured type can hold a container with rc,
// and if not, an explanation naming the largest type.
// It is safe to call from any goroutine.
func (s *Scheduler) Fits(rc queue.Constraints) (bool, string) {
	f := ComputeFit(s.types, rc, s.reserveRAM, s.cfg.Dispatcher.MaxPriceFactor)
	return len(f.Candidates) > 0, f.Why
}

func (s *Scheduler) fitFor(rc queue.Constraints) *fit {
	// A small direct-mapped cache in front of the map: queues hold few
	// distinct shapes, and hashing a map key per container costs more.
	h := uint(rc.VCPUs)*31 + uint(rc.RAM>>20)*17 + uint(rc.Scratch>>20)*7 + uint(rc.GPUs)
	e := &s.fitSmall[h%uint(len(s.fitSmall))]
	if e.ok && e.key == rc {
		return &e.f
	}
	f, ok := s.fitCache[rc]
	if !ok {
		cf := ComputeFit(s.types, rc, s.reserveRAM, s.cfg.Dispatcher.MaxPriceFactor)
		if len(s.fitCache) > 100000 {
			clear(s.fitCache)
		}
		f = fit{candidates: cf.Candidates, why: cf.Why}
		s.fitCache[rc] = f
	}
	*e = fitSlot{key: rc, f: f, ok: true}
	return &e.f
}

type fitSlot struct {
	key queue.Constraints
	f   fit
	ok  bool
}

// Fit is the result of ComputeFit.
type Fit struct {
	Candidates []int  // indices into types, cheapest first, within the price factor
	Why        string // when Candidates is empty: what is needed and what the largest type has
}

// ComputeFit finds the types (sorted by price) that hold rc with
// reserveRAM extra, keeping those priced within factor × the cheapest.
func ComputeFit(types []cloud.InstanceType, rc queue.Constraints, reserveRAM int64, factor float64) Fit {
	var out Fit
	cheapest := -1.0
	for i, t := range types {
		if !typeHolds(t, rc, reserveRAM) {
			continue
		}
		if cheapest < 0 {
			cheapest = t.Price
		}
		if t.Price <= cheapest*factor+1e-12 {
			out.Candidates = append(out.Candidates, i)
		}
	}
	if len(out.Candidates) == 0 {
		out.Why = explainNoFit(types, rc, reserveRAM)
	}
	return out
}

func typeHolds(t cloud.InstanceType, rc queue.Constraints, reserveRAM int64) bool {
	return rc.VCPUs <= t.VCPUs && rc.RAM+reserveRAM <= t.RAM && rc.Scratch <= t.Scratch && rc.GPUs <= t.GPUs
}

func explainNoFit(types []cloud.InstanceType, rc queue.Constraints, reserveRAM int64) string {
	if len(types) == 0 {
		return "no instance types are configured"
	}
	var maxT cloud.InstanceType
	for _, t := range types {
		maxT.VCPUs = max(maxT.VCPUs, t.VCPUs)
		maxT.RAM = max(maxT.RAM, t.RAM)
		maxT.Scratch = max(maxT.Scratch, t.Scratch)
		maxT.GPUs = max(maxT.GPUs, t.GPUs)
	}
	switch {
	case rc.RAM+reserveRAM > maxT.RAM:
		return "needs " + config.FormatSize(rc.RAM+reserveRAM) + " RAM (with reserve_extra_ram), largest is " + config.FormatSize(maxT.RAM)
	case rc.VCPUs > maxT.VCPUs:
		return "needs " + strconv.Itoa(rc.VCPUs) + " vCPUs, largest is " + strconv.Itoa(maxT.VCPUs)
	case rc.Scratch > maxT.Scratch:
		return "needs " + config.FormatSize(rc.Scratch) + " scratch, largest is " + config.FormatSize(maxT.Scratch)
	case rc.GPUs > maxT.GPUs:
		return "needs " + strconv.Itoa(rc.GPUs) + " GPUs, largest has " + strconv.Itoa(maxT.GPUs)
	}
	return "no single type has every resource it needs (vCPUs " + strconv.Itoa(rc.VCPUs) + ", RAM " +
		config.FormatSize(rc.RAM+reserveRAM) + ", scratch " + config.FormatSize(rc.Scratch) + ", GPUs " + strconv.Itoa(rc.GPUs) + ")"
}

// RunPass runs one reconcile + mapping pass, then issues the container
// starts it decided (after they are written to the store).
func (s *Scheduler) RunPass() Stats {
	t0 := time.Now()
	now := s.clock.Now()
	s.views = s.pool.Instances(s.views)
	failures := append(s.pool.TakeStartFailures(), s.revert...)
	s.revert = s.revert[:0]
	ready := s.pool.Ready() || now.Sub(s.started) >= s.cfg.Dispatcher.StaleLockTimeout
	quotaLimit, poolAtQuota := s.pool.Quota()
	st := Stats{ByState: map[queue.State]int{}, QuotaLimit: quotaLimit}
	s.starts = s.starts[:0]
	s.forgets = s.forgets[:0]

	err := s.queue.Pass(func(tx *queue.Tx) {
		s.indexInstances()
		s.handleStartFailures(tx, failures)
		anyUnknown := s.reconcileReports(tx, ready, &st)
		s.reconcileRunning(tx, ready, anyUnknown, &st)
		s.mapQueue(tx, now, ready, &st)
		if st.AtQuota {
			s.shutdownUnallocated()
		}
	})
	if err != nil {
		s.log.Error("write queue after pass", "err", err)
	} else {
		// Only once the final states are on disk: a runner that forgot
		// a container the store still has running would get it retried
		// after a restart. Unwritten, the exits are reported again by
		// the next probe.
		for _, f := range s.forgets {
			s.pool.ForgetContainer(f.inst, f.containerID)
		}
	}
	for _, a := range s.starts {
		if err := s.pool.StartContainer(a.inst, a.spec); err != nil {
			// Refused before anything was sent (e.g. the instance was
			// held since the pass): not an attempt.
			s.revert = append(s.revert, worker.StartFailure{ContainerID: a.spec.ID, InstanceID: a.inst, Err: err, NeverSent: true})
		}
	}
	st.Starts = len(s.starts)
	st.AtQuota = st.AtQuota || poolAtQuota
	st.Duration = time.Since(t0)
	return st
}

// forgetAction is an exited container the runner of inst can forget once
// the pass is written.
type forgetAction struct {
	inst        cloud.InstanceID
	containerID string
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

func (s *Scheduler) handleStartFailures(tx *queue.Tx, failures []worker.StartFailure) {
	for _, f := range failures {
		c := tx.Get(f.ContainerID)
		if c == nil || c.State != queue.Running || c.InstanceID != string(f.InstanceID) {
			continue
		}
		s.log.Warn("container start failed", "container", c.ID, "instance", f.InstanceID, "err", f.Err)
		why := "start on " + string(f.InstanceID) + " failed: " + errString(f.Err)
		var err error
		if f.NeverSent && !c.RunnerSeen {
			err = tx.RevertStart(c, why)
		} else {
			err = tx.Requeue(c, why)
		}
		if err != nil {
			s.log.Error("requeue after start failure", "container", c.ID, "err", err)
		}
	}
}

// reconcileReports acts on what runners report: exits, unknown or
// cancelled containers still running, and containers to re-adopt.
func (s *Scheduler) reconcileReports(tx *queue.Tx, ready bool, st *Stats) (anyUnknown bool) {
	clear(s.reported)
	clear(s.blockedStart)
	s.adopted = s.adopted[:0]
	for i := range s.views {
		v := &s.views[i]
		if v.State == worker.StateUnknown {
			anyUnknown = true
		}
		for j := range v.Reported {
			r := &v.Reported[j]
			c := tx.Get(r.ID)
			running := r.State == runner.StateRunning
			if running {
				s.reported[r.ID] = struct{}{}
			}
			switch {
			case c == nil || c.State.Final():
				if running {
					s.kill(st, v.ID, r.ID)
				} else {
					s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
				}
			case c.State == queue.Running && c.InstanceID != string(v.ID):
				// Another copy elsewhere: only one may run.
				if running {
					s.kill(st, v.ID, r.ID)
				} else {
					s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
				}
			case c.State != queue.Running:
				// The record missed a start (a crash between start and
				// write): adopt it, unless its instance is going away.
				if v.State == worker.StateShutdown {
					continue
				}
				if !running && c.State == queue.Queued && c.Attempts > 0 {
					// An exited earlier attempt of a requeued container.
					s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
					s.blockedStart[r.ID] = struct{}{}
					continue
				}
				if err := tx.Adopt(c, string(v.ID), v.Type, r.StartedAt); err != nil {
					s.log.Error("adopt container", "container", c.ID, "err", err)
					continue
				}
				s.adopted = append(s.adopted, c)
				fallthrough
			default: // Running here
				tx.MarkSeen(c)
				if !running {
					if err := tx.Finish(c, r.ExitCode, r.FinishedAt); err != nil {
						s.log.Error("finish container", "container", c.ID, "err", err)
						continue
					}
					s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
					if !c.State.Final() {
						// Retried under on-failure: the runner refuses to
						// start an id it still holds, so the retry waits
						// until the exited attempt is forgotten.
						s.blockedStart[r.ID] = struct{}{}
					}
					continue
				}
				if c.KillRequested || c.Priority == 0 {
					s.kill(st, v.ID, r.ID)
				} else if mrt := time.Duration(c.Scheduling.MaxRunTime); mrt > 0 && tx.Now().Sub(c.StartedAt) > mrt {
					tx.RequestKill(c, "max_run_time "+mrt.String()+" exceeded")
					s.kill(st, v.ID, r.ID)
				}
			}
		}
	}
	for id := range s.reported {
		if c := tx.Get(id); c != nil && !c.State.Final() && c.State != queue.Running {
			s.blockedStart[id] = struct{}{}
		}
	}
	return anyUnknown
}

// reconcileRunning handles Running records whose instance is gone or whose
// runner no longer lists them, and accounts resource use per instance.
func (s *Scheduler) reconcileRunning(tx *queue.Tx, ready, anyUnknown bool, st *Stats) {
	// Only the containers Running at the start of the pass, plus those
	// adopted just now, can be Running: no need to walk the whole queue.
	running := tx.RunningAtStart()
	for k := 0; k < len(running)+len(s.adopted); k++ {
		var c *queue.Container
		if k < len(running) {
			c = running[k]
		} else {
			c = s.adopted[k-len(running)]
		}
		if c.State != queue.Running {
			continue
		}
		idx, ok := s.byID[cloud.InstanceID(c.InstanceID)]
		if !ok {
			if !ready || anyUnknown {
				continue // it may be on an instance not yet probed
			}
			if err := tx.Requeue(c, "instance "+c.InstanceID+" disappeared"); err != nil {
				s.log.Error("requeue", "container", c.ID, "err", err)
			}
			continue
		}
		sl := &s.slots[idx]
		v := sl.view
		if v.State == worker.StateShutdown {
			// Its instance is being destroyed (killed, or shut down after
			// failing probes): the container dies with it.
			if err := tx.Requeue(c, "instance "+c.InstanceID+" shut down"); err != nil {
				s.log.Error("requeue", "container", c.ID, "err", err)
			}
			continue
		}
		if _, seen := s.reported[c.ID]; !seen && !v.ListedAt.IsZero() && v.ListedAt.After(c.StartedAt) && !slices.Contains(v.Containers, c.ID) && !isReported(v, c.ID) {
			var err error
			switch {
			case c.RunnerSeen:
				err = tx.Requeue(c, "runner on "+c.InstanceID+" lost it")
			case c.StartSent():
				// Sent, and not listed since: it may never have run, or
				// run and been lost (a start whose reply was lost, then
				// the runner's record of it): the attempt counts, or
				// max_attempts would not bound the runs.
				err = tx.Requeue(c, "start on "+c.InstanceID+" sent, but its runner does not list it")
			default:
				// Recorded as started before a restart, never sent by
				// this process, and not listed: not an attempt.
				err = tx.RevertStart(c, "start on "+c.InstanceID+" never reached its runner")
			}
			if err != nil {
				s.log.Error("requeue", "container", c.ID, "err", err)
			}
			continue
		}
		if _, reported := s.reported[c.ID]; c.KillRequested && !reported && v.State != worker.StateShutdown {
			// Not listed yet (its start may be in flight); a reported one
			// was handled with the runner's report.
			s.kill(st, v.ID, c.ID)
		}
		if !slices.Contains(v.Containers, c.ID) {
			sl.count++
		}
		addUse(&sl.used, c.RuntimeConstraints, s.reserveRAM)
		sl.allocated = true
	}
	s.finishIndex()
}

// kill asks the pool to kill a container, counting it when a new TERM went
// out (the pool ignores repeats while a kill is under way).
func (s *Scheduler) kill(st *Stats, inst cloud.InstanceID, id string) {
	if s.pool.KillContainer(inst, id) {
		st.Kills++
	}
}

func addUse(u *queue.Constraints, rc queue.Constraints, reserve int64) {
	u.VCPUs += rc.VCPUs
	u.RAM += rc.RAM + reserve
	u.Scratch += rc.Scratch
	u.GPUs += rc.GPUs
}

func (s *Scheduler) hasRoom(sl *slot, rc queue.Constraints) bool {
	if s.maxPer > 0 && sl.count >= s.maxPer {
		return false
	}
	t := &s.types[sl.typ]
	return sl.used.VCPUs+rc.VCPUs <= t.VCPUs &&
		sl.used.RAM+rc.RAM+s.reserveRAM <= t.RAM &&
		sl.used.Scratch+rc.Scratch <= t.Scratch &&
		sl.used.GPUs+rc.GPUs <= t.GPUs
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

func mode(ready bool) int {
	if ready {
		return 0
	}
	return 1
}

func geq(a, b queue.Constraints) bool {
	return a.VCPUs >= b.VCPUs && a.RAM >= b.RAM && a.Scratch >= b.Scratch && a.GPUs >= b.GPUs
}

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

// passState is the mapping pass's running state.
type passState struct {
	tx        *queue.Tx
	now       time.Time
	ready     bool
	paused    bool
	createErr error // sticky for the pass once the cloud says no
	headKept  bool
	position  int
	st        *Stats
}

// mapQueue walks Locked and Queued containers in order and decides, for
// each, start / wait / create / unlock, leaving a pending reason.
func (s *Scheduler) mapQueue(tx *queue.Tx, now time.Time, ready bool, st *Stats) {
	ps := passState{tx: tx, now: now, ready: ready, paused: tx.Paused(), st: st}
	clear(s.blockedType)
	var byState [len(queue.States)]int
	var oldest time.Time // first seen of the longest-waiting container
	active := tx.Active()
	for k, c := range active {
		if k%touchAhead == 0 {
			s.touch(active[k:min(len(active), k+touchAhead)])
		}
		// Active still holds containers that finished earlier in this pass.
		if c.State.Final() {
			byState[stateIndex(c.State)]++
			continue
		}
		if c.State == queue.Running {
			if c.InstanceID != "" {
				tx.SetPending(c, queue.Pending{})
			}
		} else {
			if oldest.IsZero() || c.FirstSeenAt.Before(oldest) {
				oldest = c.FirstSeenAt
			}
			s.mapOne(&ps, c)
		}
		byState[stateIndex(c.State)]++
	}
	for i, n := range byState {
		if n > 0 {
			st.ByState[queue.States[i]] = n
		}
	}
	st.AllocatedNotStart = st.ByState[queue.Locked]
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
		n += len(c.State) + c.Pending().N
	}
	s.touchSink = n
}

func (s *Scheduler) unlock(ps *passState, c *queue.Container) {
	if c.State == queue.Locked {
		if err := ps.tx.Unlock(c); err == nil {
			ps.st.Unlocks++
		}
	}
}

func (s *Scheduler) mapOne(ps *passState, c *queue.Container) {
	tx, st := ps.tx, ps.st
	ps.position++
	switch {
	case !ps.ready:
		tx.SetPending(c, queue.Pending{Code: queue.ReasonStartup})
		return
	case c.Held:
		s.unlock(ps, c)
		tx.SetPending(c, queue.Pending{Code: queue.ReasonHeld})
		return
	case c.Priority == 0:
		s.unlock(ps, c)
		tx.SetPending(c, queue.Pending{Code: queue.ReasonPriorityZero})
		return
	case ps.paused:
		s.unlock(ps, c)
		tx.SetPending(c, queue.Pending{Code: queue.ReasonPaused})
		return
	}
	if len(s.blockedStart) > 0 {
		if _, ok := s.blockedStart[c.ID]; ok {
			// A previous attempt is still on a runner (being killed
			// or forgotten).
			tx.SetPending(c, queue.Pending{Code: queue.ReasonRequeued})
			return
		}
	}
	f := s.fitFor(c.RuntimeConstraints)
	if len(f.candidates) == 0 {
		s.unlock(ps, c)
		tx.SetPending(c, queue.Pending{Code: queue.ReasonNoFit, Arg: f.why})
		return
	}
	rc := c.RuntimeConstraints
	// 1. An instance that can take it now, cheapest type first.
	if i := s.pickAmong(f.candidates, rc, true); i >= 0 {
		sl := &s.slots[i]
		tname := s.types[sl.typ].Name
		if c.State == queue.Queued {
			if err := tx.Lock(c, tname); err != nil {
				s.log.Error("lock", "container", c.ID, "err", err)
				return
			}
		}
		if err := tx.Run(c, string(sl.view.ID), tname); err != nil {
			s.log.Error("run", "container", c.ID, "err", err)
			return
		}
		s.place(i, rc)
		ps.position--
		s.starts = append(s.starts, startAction{inst: sl.view.ID, spec: runner.Spec{
			ID: c.ID, Command: c.Command, Env: c.Env, Image: c.Image,
			MaxRunTime: time.Duration(c.Scheduling.MaxRunTime),
		}})
		return
	}
	// 2. An instance that is booting (or being created) with room for it.
	if i := s.pickAmong(f.candidates, rc, false); i >= 0 {
		sl := &s.slots[i]
		if !s.lockFor(tx, c, s.types[sl.typ].Name) {
			return
		}
		s.place(i, rc)
		tx.SetPending(c, queue.Pending{Code: queue.ReasonBooting, Arg: string(sl.view.ID)})
		return
	}
	// 3. Create an instance, unless the cloud already said no this pass.
	if ps.createErr == nil {
		typ, err := s.create(f.candidates, s.blockedType)
		switch {
		case err == nil:
			st.Creates++
			if !s.lockFor(tx, c, s.types[typ].Name) {
				return
			}
			s.addPending(typ, rc)
			tx.SetPending(c, queue.Pending{Code: queue.ReasonBooting})
			return
		case errors.Is(err, worker.ErrAtQuota), errors.Is(err, worker.ErrThrottled):
			ps.createErr = err
		default: // every candidate type is in a capacity back-off
			s.staleUnlock(c, tx, ps.now, st)
			tx.SetPending(c, queue.Pending{Code: queue.ReasonCapacity, Arg: err.Error()})
			return
		}
	}
	if errors.Is(ps.createErr, worker.ErrAtQuota) {
		st.AtQuota = true
		st.OverQuota++
		if !ps.headKept {
			// The head keeps (or takes) its lock so the next free slot
			// goes to it; it is never unlocked for being at quota.
			ps.headKept = true
			if c.State == queue.Queued {
				if err := tx.Lock(c, s.types[f.candidates[0]].Name); err != nil {
					s.log.Error("lock", "container", c.ID, "err", err)
				}
			}
			tx.SetPending(c, queue.Pending{Code: queue.ReasonQuota, N: st.QuotaLimit})
			return
		}
		s.unlock(ps, c)
		tx.SetPending(c, queue.Pending{Code: queue.ReasonPosition, N: ps.position})
		return
	}
	// Throttled: keep whatever lock it has, unless it has gone stale.
	s.staleUnlock(c, tx, ps.now, st)
	tx.SetPending(c, queue.Pending{Code: queue.ReasonCreating, Arg: s.types[f.candidates[0]].Name})
}

// staleUnlock releases a lock that has waited longer than
// stale_lock_timeout without an instance.
func (s *Scheduler) staleUnlock(c *queue.Container, tx *queue.Tx, now time.Time, st *Stats) {
	if c.State == queue.Locked && !c.LockedAt.IsZero() && now.Sub(c.LockedAt) > s.cfg.Dispatcher.StaleLockTimeout {
		if err := tx.Unlock(c); err == nil {
			st.Unlocks++
		}
	}
}

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

func (s *Scheduler) pickAmong(candidates []int, rc queue.Constraints, wantReady bool) int {
	for _, t := range candidates {
		if i := s.pick(t, rc, wantReady); i >= 0 {
			return i
		}
	}
	return -1
}

// create asks the pool for an instance of the cheapest candidate type not
// in a capacity back-off.
func (s *Scheduler) create(candidates []int, blocked []bool) (int, error) {
	var lastErr error
	for _, t := range candidates {
		if blocked[t] {
			continue
		}
		err := s.pool.Create(s.types[t].Name)
		if err == nil {
			return t, nil
		}
		var cb *worker.CapacityBlockedError
		if errors.As(err, &cb) {
			blocked[t] = true
			lastErr = err
			continue
		}
		return -1, err
	}
	if lastErr == nil {
		lastErr = errors.New("every fitting type is out of capacity")
	}
	return -1, lastErr
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

// shutdownUnallocated shuts down idle instances no container wants, so
// that at quota the cloud's capacity goes to types that are needed.
func (s *Scheduler) shutdownUnallocated() {
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.allocated || sl.view.ID == "" || sl.view.State != worker.StateIdle || sl.view.IdleBehavior != worker.IdleRun {
			continue
		}
		s.pool.Shutdown(sl.view.ID, "at quota: idle and not needed by the queue")
	}
}

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

// isReported reports whether the runner listed id at all (running or exited).
func isReported(v *worker.InstanceView, id string) bool {
	for i := range v.Reported {
		if v.Reported[i].ID == id {
			return true
		}
	}
	return false
}

func errString(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
