// Quiet passes: a pass whose inputs are those of a pass that changed
// nothing would change nothing either, so the engine skips it
// (docs/design.md §2, How it runs).

package scheduler

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// quietState is what the last pass read, kept when it changed nothing:
// a pass walks the whole queue (65 ms at a million containers), and on a
// quiet queue every one of them found what the last one did.
//
// A pass is a function of the queue, of what the pool answers and of the
// time. The queue says when it changes (queue.PassInputs), and the pool's
// answers are asked again and compared (Quiet): its time-driven ones (the
// quota probe's extra instance, a failed-boot back-off, a create refused
// at quota, throttled or backing off) are answered afresh that way. What
// is left is the pass's own use of the time, each a deadline the pass
// notes (noteDue): the end of the start-up wait, max_run_time and a lock
// going stale. A pass that had the pool create, start, kill, forget or
// shut down anything is never quiet: those change what the next pass
// sees. A create the pool refused changed nothing; Quiet asks the pool
// what it would answer now (Pool.CreateRefusal).
type quietState struct {
	ok     bool // the last pass was quiet: the fields below describe it
	queue  queue.PassInputs
	listed bool
	ready  bool
	limit  int
	atCap  bool
	boot   []string              // BootFailing, by type
	views  []worker.InstanceView // the instances it read
	// gen is the pool's generation when views were copied, or when Quiet
	// last found the instances alike: while it holds, so do the views.
	gen uint64
	// refused holds, by type, what the pool answered the pass's creates
	// (nil: none asked); asked says which were. mixed: one type got two
	// different answers in the pass (a deadline passed during it).
	refused []error
	asked   []bool
	mixed   bool
	// listedAt: the pass's judgement of a container not listed by its
	// runner waited on the instance's next listing (reconcileRunning),
	// so the instances' ListedAt count as what the pass read.
	listedAt bool
	// due is the first time-driven deadline it saw, zero if none.
	due time.Time
	// oldest is when the longest-waiting container was first seen, so
	// that a skipped pass still reports the wait growing.
	oldest time.Time
	stats  Stats
	// spare is Quiet's buffer for the pool's instances.
	spare []worker.InstanceView
}

// noteDue records a deadline at which the pass being run would decide
// otherwise.
func (s *Scheduler) noteDue(t time.Time) {
	if q := &s.quiet; q.due.IsZero() || t.Before(q.due) {
		q.due = t
	}
}

// noteInputs records, at the start of a pass, the answers it is about to
// act on; the views are recorded by keepIfQuiet.
func (s *Scheduler) noteInputs(in queue.PassInputs, listed, ready bool, limit int, atCap bool, gen uint64) {
	q := &s.quiet
	q.ok, q.due, q.gen = false, time.Time{}, gen
	q.queue, q.listed, q.ready, q.limit, q.atCap = in, listed, ready, limit, atCap
	q.boot = q.boot[:0]
	for _, t := range s.types {
		q.boot = append(q.boot, s.pool.BootFailing(t.Name))
	}
	if q.refused == nil {
		q.refused, q.asked = make([]error, len(s.types)), make([]bool, len(s.types))
	}
	clear(q.refused)
	clear(q.asked)
	q.mixed, q.listedAt = false, false
	s.poolCalls = 0
}

// noteRefusal records the pool's refusal of a create of type t.
func (s *Scheduler) noteRefusal(t int, err error) {
	q := &s.quiet
	if q.asked[t] && !sameRefusal(q.refused[t], err) {
		q.mixed = true
	}
	q.asked[t], q.refused[t] = true, err
}

// sameRefusal reports whether a pass would take two answers of Create
// alike: it reads only their kind (errors.Is, errors.As) and their text.
// The common one, worker.ErrAtQuota, compares without allocating.
func sameRefusal(a, b error) bool {
	if a == b {
		return true
	}
	return a != nil && b != nil && reflect.TypeOf(a) == reflect.TypeOf(b) && a.Error() == b.Error()
}

// keepIfQuiet, at the end of a pass, keeps what it read if it changed
// nothing: the queue as it was when the pass began, no verb sent to the
// pool, nothing carried from an exit step, no start failure handled.
func (s *Scheduler) keepIfQuiet(st Stats, failures int) {
	q := &s.quiet
	quiet := s.poolCalls == 0 && !q.mixed && failures == 0 && len(s.revert) == 0 && len(s.forgets) == 0 &&
		st.Starts == 0 && st.Creates == 0 && st.Unlocks == 0 && st.Kills == 0 && st.Preempted == 0 && st.Unhealthy == 0 &&
		!q.queue.StoreDown && s.queue.PassInputs() == q.queue
	if !quiet {
		return
	}
	q.ok = true
	q.views = append(q.views[:0], s.views...)
	q.stats = st
}

// Quiet reports whether a pass now would change nothing: the last pass
// was quiet, the queue has not changed since it began, the pool answers
// as it did, and none of its deadlines has come. If so, it returns that
// pass's Stats with the longest wait brought up to now, and the engine
// skips the pass. Calling Pass anyway is always correct.
func (s *Scheduler) Quiet() (Stats, bool) {
	return s.QuietWith(func() []worker.InstanceView {
		s.quiet.spare = s.pool.Instances(s.quiet.spare)
		return s.quiet.spare
	})
}

// QuietWith is Quiet with the pool's instances copied by take, once the
// cheaper answers are found unchanged (the last thing it asks) and only
// if the pool's generation moved: the engine keeps that copy for its cost
// ledger when the pass is skipped, so that a quiet step copies the
// instances once at most, not twice.
func (s *Scheduler) QuietWith(take func() []worker.InstanceView) (Stats, bool) {
	q := &s.quiet
	if !q.ok {
		return Stats{}, false
	}
	now := s.clock.Now()
	if !q.due.IsZero() && !now.Before(q.due) {
		return Stats{}, false
	}
	if s.queue.PassInputs() != q.queue || s.pool.Listed() != q.listed || s.pool.Ready() != q.ready {
		return Stats{}, false
	}
	if limit, atCap := s.pool.Quota(); limit != q.limit || atCap != q.atCap {
		return Stats{}, false
	}
	for i, t := range s.types {
		if s.pool.BootFailing(t.Name) != q.boot[i] {
			return Stats{}, false
		}
		if q.asked[i] && !sameRefusal(s.pool.CreateRefusal(t.Name), q.refused[i]) {
			return Stats{}, false // would create, or refuse otherwise
		}
	}
	// Taken, so kept for the next pass, which handles them first.
	if f := s.pool.TakeStartFailures(); len(f) > 0 {
		s.revert = append(s.revert, f...)
		return Stats{}, false
	}
	// The pool's generation says whether the instances changed at all:
	// a quiet step at 10,000 instances then copies and compares none. A
	// pass that waited on a listing reads ListedAt, which the generation
	// leaves out (every probe moves it): then they are compared.
	if gen := s.pool.Generation(); q.listedAt || gen != q.gen {
		if !slices.EqualFunc(take(), q.views, func(a, b worker.InstanceView) bool { return samePassView(&a, &b, q.listedAt) }) {
			return Stats{}, false
		}
		q.gen = gen // asked before the copy: a change since shows at the next Quiet
	}
	st := q.stats
	// Copies, as every pass hands out its own.
	st.ByState, st.Budgets = maps.Clone(st.ByState), slices.Clone(st.Budgets)
	if !q.oldest.IsZero() {
		st.LongestWait = max(0, now.Sub(q.oldest))
	}
	return st, true
}

// samePassView reports whether a pass reads a and b alike: the fields it
// reads are equal. The others (passIgnores) change with every probe and
// listing, which on a pool of 10,000 instances is every tick; ListedAt
// counts only when the pass waited on a listing (quietState.listedAt),
// and then only its value, as reconcileRunning reads it.
func samePassView(a, b *worker.InstanceView, listedAt bool) bool {
	return a.ID == b.ID && a.Type == b.Type && a.State == b.State && a.IdleBehavior == b.IdleBehavior &&
		a.Price == b.Price && a.ProbeFailing == b.ProbeFailing && a.Preempted == b.Preempted &&
		a.ContainersLost == b.ContainersLost && a.ListedAt.IsZero() == b.ListedAt.IsZero() &&
		(!listedAt || a.ListedAt.Equal(b.ListedAt)) &&
		slices.Equal(a.Containers, b.Containers) && slices.EqualFunc(a.Reported, b.Reported, runner.Status.Equal)
}

// passIgnores are the fields of worker.InstanceView no pass reads, which
// samePassView leaves out (its test holds it to this list).
var passIgnores = []string{
	"ProviderType", "Address", "LastContainer", "LastBusy", "AppearedAt", "LastProbe", "LastError",
	"UnreachableSince", "ProbeError", "CreatedAt", "AskedAt", "BootedAt",
}

// NoPass is the Write of a pass Quiet skipped: nothing to forget, but
// the engine's write goes on (the pool's events, the cost ledger).
func (s *Scheduler) NoPass() Write { return Write{s: s} }

// Passes returns how many passes have walked the queue (Pass, not the
// exit steps), for tests and benchmarks.
func (s *Scheduler) Passes() uint64 { return s.passes }
