// Tx: the scheduler's view of the queue during one pass, under the queue's lock.

package queue

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// Tx is the scheduler's view of the queue during one pass. It is only valid
// inside the function given to Queue.Pass, which holds the queue's lock.
// Pointers it hands out must not be kept after the pass.
type Tx struct {
	q       *Queue
	now     time.Time
	changed bool
	running int // length of the Running prefix of active at pass start
	// What nextChanged has found: how many of q.moved it has seen, and
	// the indices in q.active of those placed Queued, sorted.
	movedSeen int
	changedAt []int
}

// Pass runs fn with the queue locked and in scheduling order, then writes
// what fn changed in one transaction. Returns the flush error.
func (q *Queue) Pass(fn func(tx *Tx)) error { return q.PassThen(fn, nil) }

// PassThen is Pass that also runs unlocked (when not nil) once fn is done
// and the queue unlocked, before the pass is written: for what may act on
// the pass's decisions without waiting for the store's sync.
func (q *Queue) PassThen(fn func(tx *Tx), unlocked func()) error {
	q.PassUnwritten(fn, unlocked)
	return q.FlushPass()
}

// PassUnwritten is PassThen without the write: the caller writes it with
// FlushPass, which a later pass may run before (the engine's loop does
// not wait for the disk; what either writes is on disk once it returns).
func (q *Queue) PassUnwritten(fn func(tx *Tx), unlocked func()) {
	q.mu.Lock()
	q.sortLocked()
	// The queue's own Tx, reused: passes do not overlap (q.mu), and a
	// pass in steady state allocates nothing.
	tx := &q.tx
	*tx = Tx{q: q, now: q.clock.Now().UTC(), changedAt: tx.changedAt[:0]}
	tx.running, _ = slices.BinarySearchFunc(q.active, 1, func(c *Container, r int) int { return cmp.Compare(rank(c.State), r) })
	func() {
		defer q.mu.Unlock()
		fn(tx)
		if tx.changed {
			q.notifyLocked()
		}
	}()
	if unlocked != nil {
		unlocked()
	}
}

// FlushPass writes what passes changed (Flush, also folding the journal
// once it has reached its threshold).
func (q *Queue) FlushPass() error { return q.flush(true) }

// Now is the pass's time.
func (tx *Tx) Now() time.Time { return tx.now }

// Active returns the non-final containers in scheduling order (Running,
// Locked, Queued; priority desc; first seen asc). The order is the one at
// the start of the pass; transitions during the pass do not reorder it.
func (tx *Tx) Active() []*Container { return tx.q.active }

// RunningAtStart returns the prefix of Active that was Running when the pass
// began, without walking the whole queue.
func (tx *Tx) RunningAtStart() []*Container { return tx.q.active[:tx.running] }

// Get returns the container with id, or nil.
func (tx *Tx) Get(id string) *Container { return tx.q.byID.get(id) }

// Paused reports the scheduler's pause flag.
func (tx *Tx) Paused() bool { return tx.q.paused }

// move changes c's state and records a state event with reason.
func (tx *Tx) move(c *Container, to State, reason string) error {
	if !CanTransition(c.State, to) {
		return &TransitionError{ID: c.ID, From: c.State, To: to}
	}
	tx.q.setStateLocked(c, to)
	if to != Running {
		c.startSent = false
	}
	tx.touch(c)
	tx.q.addEventLocked(tx.now, "scheduler", "state", c.ID, string(to), reason)
	return nil
}

func (tx *Tx) touch(c *Container) {
	tx.q.changedLocked(c)
	tx.q.markDirtyLocked(c)
	tx.changed = true
}

// Lock reserves a Queued container for an instance of typeName.
func (tx *Tx) Lock(c *Container, typeName string) error {
	if err := tx.move(c, Locked, ""); err != nil {
		return err
	}
	c.LockedAt = tx.now
	c.InstanceType = typeName
	return nil
}

// SetLockedType changes the type a Locked container waits for.
func (tx *Tx) SetLockedType(c *Container, typeName string) {
	if c.InstanceType != typeName {
		c.InstanceType = typeName
		tx.touch(c)
	}
}

// Unlock returns a Locked container to Queued. Any other state is a
// TransitionError (a Running container goes back through Requeue).
func (tx *Tx) Unlock(c *Container) error {
	if c.State != Locked {
		return &TransitionError{ID: c.ID, From: c.State, To: Queued}
	}
	if err := tx.move(c, Queued, ""); err != nil {
		return err
	}
	c.LockedAt = time.Time{}
	c.InstanceType = ""
	c.InstanceID = ""
	return nil
}

// Run records that a container is being started on an instance: one more
// attempt.
func (tx *Tx) Run(c *Container, instanceID, typeName string) error {
	if err := tx.move(c, Running, ""); err != nil {
		return err
	}
	c.Attempts++
	c.RunnerSeen = false
	c.startSent = true
	c.Health = nil // a new attempt: its checks start over
	c.InstanceID = instanceID
	c.InstanceType = typeName
	c.StartedAt = tx.now
	c.ExitCode = nil
	c.ord.stale = true // its pending reason no longer applies
	c.Reason, c.ReasonCode = "", ReasonNone
	return nil
}

// MarkSeen records that a runner listed c's current attempt.
func (tx *Tx) MarkSeen(c *Container) {
	if !c.RunnerSeen {
		c.RunnerSeen = true
		tx.touch(c)
	}
}

// RevertStart returns a Running container whose start never reached its
// runner (the dispatcher died between recording the start and making it,
// or the start was refused before anything was sent) to the queue without
// counting the attempt.
func (tx *Tx) RevertStart(c *Container, why string) error {
	if c.State != Running || c.RunnerSeen {
		return &TransitionError{ID: c.ID, From: c.State, To: Queued}
	}
	if c.KillRequested {
		return tx.Cancel(c, ReasonKilled, c.KillReason)
	}
	c.Attempts--
	c.Reason, c.ReasonCode = why, ReasonRequeued
	if err := tx.move(c, Queued, why); err != nil {
		c.Attempts++
		return err
	}
	c.InstanceID, c.InstanceType = "", ""
	c.StartedAt, c.LockedAt = time.Time{}, time.Time{}
	return nil
}

// Adopt records that a runner reports c running on instanceID although the
// record did not say so (a start that happened just before a crash).
func (tx *Tx) Adopt(c *Container, instanceID, typeName string, startedAt time.Time) error {
	if err := tx.move(c, Running, ""); err != nil {
		return err
	}
	c.Attempts++
	c.RunnerSeen = true
	c.InstanceID = instanceID
	c.InstanceType = typeName
	c.StartedAt = startedAt.UTC()
	c.ExitCode = nil
	c.ord.stale = true // its pending reason no longer applies
	c.Reason, c.ReasonCode = "", ReasonNone
	return nil
}

// Finish records a Running container's exit. Under restart policy
// on-failure a non-zero exit is retried while attempts remain.
func (tx *Tx) Finish(c *Container, exitCode int, finishedAt time.Time) error {
	if c.State != Running {
		return &TransitionError{ID: c.ID, From: c.State, To: Complete}
	}
	if c.KillRequested {
		code := exitCode
		c.ExitCode = &code
		return tx.Cancel(c, ReasonKilled, c.KillReason)
	}
	if exitCode != 0 && c.RestartPolicy == RestartOnFailure && c.Attempts < c.MaxAttempts {
		return tx.Requeue(c, "exit code "+strconv.Itoa(exitCode)+", retrying")
	}
	code := exitCode
	c.ExitCode = &code
	c.FinishedAt = finishedAt.UTC()
	c.Reason, c.ReasonCode = "", ReasonNone
	return tx.move(c, Complete, "")
}

// Requeue returns a Running container to the queue (its instance died or it
// failed under on-failure), or cancels it when attempts are exhausted.
func (tx *Tx) Requeue(c *Container, why string) error {
	if c.State != Running {
		return &TransitionError{ID: c.ID, From: c.State, To: Queued}
	}
	if c.KillRequested {
		return tx.Cancel(c, ReasonKilled, c.KillReason)
	}
	if c.Attempts >= c.MaxAttempts {
		return tx.Cancel(c, ReasonMaxAttempts, "gave up after "+strconv.Itoa(c.Attempts)+" attempts: "+why)
	}
	c.Reason, c.ReasonCode = why, ReasonRequeued
	if err := tx.move(c, Queued, why); err != nil {
		return err
	}
	c.RunnerSeen = false
	c.InstanceID = ""
	c.InstanceType = ""
	c.LockedAt = time.Time{}
	return nil
}

// RequeueKilledExternally is Requeue for a container whose process a
// signal from outside the dispatcher ended: with no attempts left it ends
// Cancelled KILLED_EXTERNALLY, keeping the exit code, instead of
// MAX_ATTEMPTS.
func (tx *Tx) RequeueKilledExternally(c *Container, exitCode int, why string) error {
	if c.State != Running || c.KillRequested || c.Attempts < c.MaxAttempts {
		return tx.Requeue(c, why)
	}
	code := exitCode
	c.ExitCode = &code
	return tx.Cancel(c, ReasonKilledExternally, why+"; no attempts left ("+strconv.Itoa(c.Attempts)+" of "+strconv.Itoa(c.MaxAttempts)+")")
}

// RequestKill marks a Running container to be killed; it ends Cancelled with
// reason once its process is confirmed dead.
func (tx *Tx) RequestKill(c *Container, reason string) {
	if c.KillRequested {
		return
	}
	c.KillRequested = true
	c.KillReason = reason
	tx.touch(c)
}

// Cancel ends a container Cancelled with a reason.
func (tx *Tx) Cancel(c *Container, code ReasonCode, reason string) error {
	if !CanTransition(c.State, Cancelled) {
		return &TransitionError{ID: c.ID, From: c.State, To: Cancelled}
	}
	c.Reason, c.ReasonCode = reason, code
	c.FinishedAt = tx.now
	c.ord.stale = true
	return tx.move(c, Cancelled, reason)
}
