// Reconciling the queue with what the runners report: starts failed, exits, kills.

package scheduler

import (
	"slices"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// handleStartFailures puts containers whose start failed back in the queue:
// as a new attempt unless the start never left this process.
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
func (s *Scheduler) reconcileReports(tx *queue.Tx, st *Stats) (anyUnknown bool) {
	clear(s.reported)
	clear(s.blockedStart)
	s.reportedRunning = s.reportedRunning[:0]
	s.adopted = s.adopted[:0]
	for i := range s.views {
		v := &s.views[i]
		if v.State == worker.StateUnknown {
			anyUnknown = true
		}
		for j := range v.Reported {
			s.reconcileReport(tx, v, &v.Reported[j], st)
		}
	}
	// By the records found above, not a second lookup by id: at 10,000
	// instances those are 10,000 more misses in a map of every container.
	for _, c := range s.reportedRunning {
		if !c.State.Final() && c.State != queue.Running {
			s.blockedStart[c.ID] = struct{}{}
		}
	}
	return anyUnknown
}

// reconcileReport acts on one status r that v's runner reports: the rules
// of the pass, which the exit step (exits.go) applies to noticed exits.
func (s *Scheduler) reconcileReport(tx *queue.Tx, v *worker.InstanceView, r *runner.Status, st *Stats) {
	lost := v.ContainersLost != ""
	c := tx.Get(r.ID)
	running := r.State == runner.StateRunning
	if lost && (running || c == nil || c.State != queue.Running || c.InstanceID != string(v.ID)) {
		// Written off (reconcileRunning requeues its containers):
		// its list is stale and must not hold their next attempts
		// back. Only an exit it saw still counts.
		return
	}
	if running {
		s.reported[r.ID] = struct{}{}
		if c != nil {
			s.reportedRunning = append(s.reportedRunning, c)
		}
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
			return
		}
		if !running && c.State == queue.Queued && c.Attempts > 0 {
			// An exited earlier attempt of a requeued container.
			s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
			s.blockedStart[r.ID] = struct{}{}
			return
		}
		if err := tx.Adopt(c, string(v.ID), v.Type, r.StartedAt); err != nil {
			s.log.Error("adopt container", "container", c.ID, "err", err)
			return
		}
		s.adopted = append(s.adopted, c)
		fallthrough
	default: // Running here
		tx.MarkSeen(c)
		s.noteHealth(tx, c, r)
		if !running && s.endedLost(tx, c, v, r) {
			return
		}
		if !running && s.endedUnhealthy(tx, c, v, r, st) {
			return
		}
		if !running && c.Priority == 0 && !c.KillRequested && (r.Signal != "" || r.ExitCode != 0) {
			// Stopped for priority 0 (TERM, below): not a completion
			// and not a failure; it waits until its priority is raised.
			if err := tx.Requeue(c, "stopped at priority 0: requeued, it runs again once its priority is raised"); err != nil {
				s.log.Error("requeue at priority 0", "container", c.ID, "err", err)
			}
			s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
			s.blockedStart[r.ID] = struct{}{}
			return
		}
		if !running && r.Signal != "" && s.endedBySignal(tx, c, v, r) {
			s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
			s.blockedStart[r.ID] = struct{}{}
			return
		}
		if !running {
			if err := tx.Finish(c, r.ExitCode, r.FinishedAt); err != nil {
				s.log.Error("finish container", "container", c.ID, "err", err)
				return
			}
			s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
			if !c.State.Final() {
				// Retried under on-failure: the runner refuses to
				// start an id it still holds, so the retry waits
				// until the exited attempt is forgotten.
				s.blockedStart[r.ID] = struct{}{}
			}
			return
		}
		if c.KillRequested || c.Priority == 0 {
			s.kill(st, v.ID, r.ID)
		} else if mrt := time.Duration(c.Scheduling.MaxRunTime); mrt > 0 && tx.Now().Sub(c.StartedAt) > mrt {
			tx.RequestKill(c, "max_run_time "+mrt.String()+" exceeded")
			s.kill(st, v.ID, r.ID)
		} else if mrt > 0 {
			s.noteDue(c.StartedAt.Add(mrt + 1)) // "> mrt": the first instant past it
		}
	}
}

// endedBySignal handles a Running container its runner reports ended by a
// signal. A signal this dispatcher sent (an operator's kill, priority 0,
// max_run_time, or its instance shutting down) ends it as usual, and false
// is returned (max_run_time, which the runner enforces itself, is marked as
// the kill it is). Any other signal came from outside the dispatcher: that
// is no completion, so the container is requeued (the attempt counts) or,
// with no attempts left, Cancelled KILLED_EXTERNALLY; it returns true.
func (s *Scheduler) endedBySignal(tx *queue.Tx, c *queue.Container, v *worker.InstanceView, r *runner.Status) bool {
	if c.KillRequested || c.Priority == 0 {
		return false
	}
	if mrt := time.Duration(c.Scheduling.MaxRunTime); mrt > 0 && !r.FinishedAt.IsZero() && r.FinishedAt.Sub(r.StartedAt) >= mrt {
		// Both times are the runner's clock.
		tx.RequestKill(c, "max_run_time "+mrt.String()+" exceeded")
		return false
	}
	var why string
	if v.State == worker.StateShutdown {
		why = "instance " + c.InstanceID + " shut down"
	} else {
		why = "killed by signal " + r.Signal + " from outside the dispatcher"
		s.log.Warn("container killed by a signal from outside the dispatcher", "container", c.ID, "instance", v.ID, "signal", r.Signal, "exit_code", r.ExitCode)
	}
	var err error
	if v.State == worker.StateShutdown {
		err = tx.Requeue(c, why)
	} else {
		err = tx.RequeueKilledExternally(c, r.ExitCode, why)
	}
	if err != nil {
		s.log.Error("requeue after a signal", "container", c.ID, "err", err)
	}
	return true
}

// reconcileRunning handles Running records whose instance is gone or whose
// runner no longer lists them, and accounts resource use per instance.
//
// Until ready (instances probed, or the start-up wait over) and while any
// instance is unknown, a record whose instance is missing is left alone: it
// may be on an instance not probed yet.
//
// Before the first listing (listed: one had completed before the pass
// copied the instances), a missing instance may only not be listed yet:
// after a restart, stale_lock_timeout can end the start-up wait first (a
// listing that waits on hosts that do not answer).
func (s *Scheduler) reconcileRunning(tx *queue.Tx, ready, listed, anyUnknown bool, st *Stats) {
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
			if !ready || anyUnknown || !listed {
				continue // it may be on an instance not yet listed or probed
			}
			if s.requeueIfPreempted(tx, c, nil, st) {
				continue
			}
			if err := tx.Requeue(c, "instance "+c.InstanceID+" disappeared"); err != nil {
				s.log.Error("requeue", "container", c.ID, "err", err)
			}
			continue
		}
		sl := &s.slots[idx]
		v := sl.view
		if v.ContainersLost != "" {
			// Its instance was destroyed, killed by an operator, or given
			// up after timeout_unreachable. Until then, even in shutdown,
			// the container may still be running there: it is not run
			// again (docs/design.md §10.1).
			if s.requeueIfPreempted(tx, c, v, st) {
				continue
			}
			if err := tx.Requeue(c, v.ContainersLost); err != nil {
				s.log.Error("requeue", "container", c.ID, "err", err)
			}
			continue
		}
		_, seen := s.reported[c.ID]
		unlisted := !seen && !slices.Contains(v.Containers, c.ID) && !isReported(v, c.ID)
		if unlisted && !v.ListedAt.IsZero() && v.ListedAt.After(c.StartedAt) {
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
		if unlisted {
			// Judged lost once a listing after its start still misses it:
			// the next listing's time is an input of the pass (Quiet).
			s.quiet.listedAt = true
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
	s.poolCalls++
	if s.pool.KillContainer(inst, id) {
		st.Kills++
	}
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

// errString is err's text, for errors that may be nil.
func errString(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
