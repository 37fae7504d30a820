// Package scheduler maps queued containers onto instances (docs/design.md
// §5): the mapping pass, the reconcile pass and the stale-lock fixer, with
// pending reasons for every container that is not running.
//
// A pass walks the queue once in scheduling order. Per-type instance lists,
// a per-shape cache of fitting types, and short-circuits once a type or the
// cloud is exhausted keep it O(queued + instances), not O(queued × instances).
package scheduler

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// Stats describe the last pass, for metrics and the summary.
type Stats struct {
	Duration          time.Duration
	ByState           map[queue.State]int
	Starts            int
	Creates           int
	Unlocks           int
	Kills             int
	Preempted         int           // Running containers requeued after a spot interruption (no attempt spent)
	Unhealthy         int           // containers whose runner killed them for failing their health check
	LongestWait       time.Duration // oldest Queued/Locked container's wait
	AllocatedNotStart int           // Locked containers
	OverQuota         int           // containers not allocated because of quota
	AtQuota           bool
	QuotaLimit        int
	// AtBudget: a container waits on the fleet's dollar cap; Budgets are
	// the caps and their $/h at the pass's start (budget.go).
	AtBudget bool
	Budgets  []BudgetRate
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
	// startupLogged: the end of the start-up wait was logged.
	startupLogged bool

	types     []cloud.InstanceType // sorted by price
	typeIndex map[string]int
	fitCache  map[fitKey]fit
	fitSmall  [64]fitSlot
	// shapeFits, by the queue's shape id (Tx.Shapes), says whether some
	// type fits the shape without labels, for walkTail; it covers the
	// shapes seen so far (a scheduler's types never change).
	shapeFits  []bool
	noTailPath bool // tests: no walkTail, every waiting container goes through mapOne
	reserveRAM int64
	maxPer     int
	spread     bool

	// scratch, reused every pass
	views []worker.InstanceView
	slots []slot
	byID  map[cloud.InstanceID]int
	// roomy lists, per [mode][type], the slots with room for some
	// container in slot order; entries before roomyHead, and those whose
	// slot is no longer roomy, are dropped. roomyByCount counts the roomy
	// slots by how many containers they hold (no trailing zeros).
	roomy        [2][][]int
	roomyHead    [2][]int
	roomyByCount [2][][]int
	// roomySlots is how many slots are roomy, of any mode and type.
	roomySlots int
	// Per type, indexed [mode][type] with mode 0 = ready, 1 = waiting: the
	// smallest need that found no room this pass (anything at least as
	// big fails too: room only shrinks, until addPending adds a slot).
	failNeed    [2][]queue.Constraints
	failed      [2][]bool
	blockedType []bool
	// bootFailing, per type, for this pass: "instances of type T fail to
	// boot: <error>", or "".
	bootFailing []string
	reported    map[string]struct{}
	// reportedRunning holds the records of the containers in reported.
	reportedRunning []*queue.Container
	// blockedStart holds non-Running containers some runner still reports
	// (running, or exited and not yet forgotten): they must not start
	// until that attempt is gone.
	blockedStart map[string]struct{}
	adopted      []*queue.Container
	starts       []startAction
	forgets      []forgetAction
	revert       []worker.StartFailure
	// recordFirst, when set, writes the pass before its starts are sent
	// (RecordStartsFirst): every pass with starts when recordAll, else
	// only one that starts a container again.
	recordFirst func() error
	recordAll   bool
	touchSink   int // keeps touch's loads from being optimised away
	// carried holds what exit steps counted (exits.go), for the next
	// pass's Stats.
	carried Stats
	// spareForgets holds forget buffers that Writes are done with, for
	// the next ones (Write.Done may run on another goroutine).
	spareForgets chan []forgetAction

	labels    labelIndex // the label pairs of the types, as bits
	fitSmallL [64]fitSlotL
	// labelSets remembers the label set of each labelled record walked;
	// labelledSeen counts those walked this pass.
	labelSets    map[*queue.Container]labelSet
	labelledSeen int
	// waitingAtQuota lists, in walk order, the containers of this pass that
	// wait at quota with no instance being freed for them (see quota.go).
	waitingAtQuota []quotaWaiter
	// requeued holds containers of the Running prefix requeued this pass,
	// walked after the others.
	requeued []placed
	// blockedAt holds where the containers of blockedStart sit in the
	// queue's order, sorted, for walkTail (found once per pass).
	blockedAt []int
	// budgets are the dollar caps (budget.go); labelBudgets: some are a
	// label's.
	budgets      []budgetCap
	labelBudgets bool

	// quiet is what the last pass read, if it changed nothing (quiet.go);
	// poolCalls counts the pool verbs the pass being run sent, passes the
	// passes run.
	quiet     quietState
	poolCalls int
	passes    uint64
}

// placed is a container and its index in the pass's Tx.Active.
type placed struct {
	c *queue.Container
	i int
}

type startAction struct {
	inst cloud.InstanceID
	spec runner.Spec
	// again: the container has had an attempt before this one.
	again bool
}

// RecordStartsFirst has passes with starts written by write (the queue's
// FlushPass) before they are sent, and none sent when the write fails.
//
// With all, every such pass: for a store whose writes can fail while the
// disk of this box is fine (a database server restarting, or full), so
// that no start goes out that the store could not record.
//
// Without, only a pass that starts a container again (an attempt after its
// first); the others go out before the write, sparing each start the
// write's fdatasyncs. A first attempt the store missed (a crash before the
// write) is adopted from its runner's report after a restart, counted, as
// any start just before a crash is. A later one could not be: its record
// still says Queued with the earlier attempts, and a runner's exited run of
// such a record is taken for the earlier attempt's, forgotten, and the
// container run once more (docs/design.md §3, §10).
func (s *Scheduler) RecordStartsFirst(write func() error, all bool) {
	s.recordFirst, s.recordAll = write, all
}

// mustRecordFirst reports whether the pass's starts wait for its write
// (RecordStartsFirst).
func (s *Scheduler) mustRecordFirst() bool {
	if len(s.starts) == 0 || s.recordFirst == nil {
		return false
	}
	return s.recordAll || slices.ContainsFunc(s.starts, func(a startAction) bool { return a.again })
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
		fitCache:     map[fitKey]fit{},
		labels:       newLabelIndex(cfg.InstanceTypes),
		labelSets:    map[*queue.Container]labelSet{},
		reserveRAM:   cfg.Dispatcher.ReserveExtraRAM,
		maxPer:       cfg.Dispatcher.MaxContainersPerInstance,
		spread:       cfg.Dispatcher.SchedulerProfile == "spread",
		byID:         map[cloud.InstanceID]int{},
		reported:     map[string]struct{}{},
		blockedStart: map[string]struct{}{},
		spareForgets: make(chan []forgetAction, 4),
	}
	for i, t := range s.types {
		s.typeIndex[t.Name] = i
	}
	for m := range 2 {
		s.roomy[m] = make([][]int, len(s.types))
		s.roomyHead[m] = make([]int, len(s.types))
		s.roomyByCount[m] = make([][]int, len(s.types))
		s.failNeed[m] = make([]queue.Constraints, len(s.types))
		s.failed[m] = make([]bool, len(s.types))
	}
	s.blockedType = make([]bool, len(s.types))
	s.bootFailing = make([]string, len(s.types))
	s.newBudgets()
	return s
}

// RunPass runs one pass (Pass) and writes it.
func (s *Scheduler) RunPass() Stats {
	st, w := s.Pass()
	w.Done(s.queue.FlushPass())
	return st
}

// Pass runs one reconcile + mapping pass and issues the container starts
// it decided. The caller writes the pass (queue.FlushPass), then calls the
// returned Write's Done; the next pass may run meanwhile.
func (s *Scheduler) Pass() (Stats, Write) {
	t0 := time.Now()
	s.passes++
	inputs := s.queue.PassInputs() // before the pass reads the queue: a change after it is the next pass's
	now := s.clock.Now()
	// Asked before the copy, not after: the listing that ends the wait
	// adds what it found under the same lock that marks it done, so a
	// copy taken after "listed" holds those instances. Asked after, a
	// listing ending in between would leave its instances out of the
	// copy and their containers judged gone.
	listed := s.pool.Listed()
	gen := s.pool.Generation() // before the copy: a change after it shows at the next Quiet
	s.views = s.pool.Instances(s.views)
	failures := append(s.pool.TakeStartFailures(), s.revert...)
	s.revert = s.revert[:0]
	quotaLimit, poolAtQuota := s.pool.Quota()
	// Before startupOver asks it again: a pool ready in between has the
	// next Quiet see a change, not miss one.
	s.noteInputs(inputs, listed, s.pool.Ready(), quotaLimit, poolAtQuota, gen)
	ready := s.startupOver(now)
	st := Stats{ByState: make(map[queue.State]int, len(queue.States)), QuotaLimit: quotaLimit}
	s.starts = s.starts[:0]
	s.forgets = s.forgets[:0]

	// The starts go out before the pass is written, not after: the write
	// ends in two fdatasyncs, which on a busy disk took up to half a
	// second per pass, and every container's start waited for them
	// (docs/design.md §3). A start the store missed (a crash before the write) is
	// adopted from its runner's report, as any start just before a crash
	// is; forgets, which lose what the store does not have, still wait
	// (Write.Done). With RecordStartsFirst the starts of a pass that
	// starts a container again (and on PostgreSQL, all) wait for the
	// write too (sendStarts).
	s.queue.PassUnwritten(func(tx *queue.Tx) {
		s.indexInstances()
		s.handleStartFailures(tx, failures)
		anyUnknown := s.reconcileReports(tx, &st)
		s.reconcileRunning(tx, ready, listed, anyUnknown, &st)
		s.mapQueue(tx, now, ready, &st)
		if st.AtQuota || st.AtBudget {
			s.shutdownUnallocated(st.AtQuota)
		}
	}, s.sendStarts)
	st.Starts = len(s.starts)
	st.AtQuota = st.AtQuota || poolAtQuota
	// What exit steps counted since the last pass is reported with it.
	st.Kills += s.carried.Kills
	st.Preempted += s.carried.Preempted
	st.Unhealthy += s.carried.Unhealthy
	s.carried = Stats{}
	st.Duration = time.Since(t0)
	s.keepIfQuiet(st, len(failures))
	return st, s.write()
}

// sendStarts hands the pass's starts to the pool, once they are written
// when the scheduler records them first (RecordStartsFirst).
func (s *Scheduler) sendStarts() {
	if s.mustRecordFirst() {
		if err := s.recordFirst(); err != nil {
			// Not sent, so not an attempt: the next pass puts them back
			// in the queue, where they wait until the store writes again.
			err = fmt.Errorf("not sent: the store cannot record the start: %w", err)
			for _, a := range s.starts {
				s.revert = append(s.revert, worker.StartFailure{ContainerID: a.spec.ID, InstanceID: a.inst, Err: err, NeverSent: true})
			}
			s.starts = s.starts[:0] // none made: the pass's Stats count none
			return
		}
	}
	for _, a := range s.starts {
		if err := s.pool.StartContainer(a.inst, a.spec); err != nil {
			// Refused before anything was sent (e.g. the instance was
			// held since the pass): not an attempt.
			s.revert = append(s.revert, worker.StartFailure{ContainerID: a.spec.ID, InstanceID: a.inst, Err: err, NeverSent: true})
		}
	}
}

// forgetAction is an exited container the runner of inst can forget once
// the pass is written.
type forgetAction struct {
	inst        cloud.InstanceID
	containerID string
}
