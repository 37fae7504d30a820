// Starting and killing containers through the runner, and fetching their output.

package worker

import (
	"context"
	"errors"
	"slices"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// StartContainer starts a container on an idle or running instance whose
// idle behaviour is run. The start itself is asynchronous; a failure is
// reported by TakeStartFailures.
func (p *Pool) StartContainer(id cloud.InstanceID, spec runner.Spec) error {
	if err := runner.ValidateSpec(&spec); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.byID[id]
	if w == nil {
		return ErrNotFound
	}
	if (w.v.State != StateIdle && w.v.State != StateRunning) || w.v.IdleBehavior != IdleRun {
		return ErrNotReady
	}
	for _, s := range w.starts {
		if s.id == spec.ID && s.doneSeq == 0 {
			return nil // already starting
		}
	}
	if _, forgetting := w.forgetting[spec.ID]; forgetting || findStatus(w.v.Reported, spec.ID) >= 0 {
		return ErrEarlierAttempt
	}
	// A done start of the same id is an earlier attempt's, kept until a
	// list after it: this start is another, and must be sent.
	w.starts = slices.DeleteFunc(w.starts, func(s startEntry) bool { return s.id == spec.ID })
	now := p.clk.Now()
	w.starts = append(w.starts, startEntry{id: spec.ID, seq: p.nextSeqLocked()})
	if !slices.Contains(w.v.Containers, spec.ID) {
		w.v.Containers = append(w.v.Containers, spec.ID)
	}
	w.setState(StateRunning, "container start sent")
	w.v.LastContainer = spec.ID
	w.rowChanged()
	w.v.LastBusy = now
	p.notifyLocked()
	// Starts go out in "runner batch" calls, one sender per instance: a
	// start queued while a batch is in flight joins the next one. The
	// first ones on a fresh instance wait for its watch (startsHeldLocked),
	// opened now if the pool's step has not yet.
	w.startQ = append(w.startQ, spec)
	p.startWatchLocked(w, now)
	return p.sendStartsLocked(w)
}

// sendStartsLocked starts w's start sender unless one runs, nothing is
// queued or the starts wait for w's watch.
func (p *Pool) sendStartsLocked(w *instance) error {
	if w.startBusy || len(w.startQ) == 0 || p.startsHeldLocked(w) {
		return nil
	}
	w.startBusy = true
	if !p.goLocked(func() { p.runStartBatches(w) }) {
		w.startBusy = false
		return errStopped
	}
	return nil
}

// runStartBatches sends w's queued starts in "runner batch" calls until
// none are left, then probes w soon so that short containers are noticed.
func (p *Pool) runStartBatches(w *instance) {
	for {
		p.mu.Lock()
		n := min(len(w.startQ), runner.MaxBatch)
		if n == 0 || p.canceled() {
			w.startBusy = false
			p.mu.Unlock()
			return
		}
		specs := slices.Clone(w.startQ[:n])
		w.startQ = slices.Delete(w.startQ, 0, n)
		p.mu.Unlock()

		var errs []error
		exec, err := p.executor(w)
		outcome := startNeverSent
		if err == nil {
			err = p.mayAct()
		}
		if err == nil {
			client := p.runnerClient(exec)
			errs, err = client.StartMany(p.ctx, specs)
			outcome = classifyBatchErr(err)
			p.noteFenced(err)
			for _, e := range errs {
				p.noteFenced(e)
			}
		}
		p.mu.Lock()
		for i := range specs {
			if err != nil {
				p.startDoneLocked(w, specs[i].ID, err, outcome)
			} else {
				p.startDoneLocked(w, specs[i].ID, errs[i], startRefused)
			}
		}
		if !w.watching {
			// Without a watch, a list soon is how short containers'
			// exits are seen; with one, the runner announces them.
			w.nextProbe = time.Time{}
		}
		p.notifyLocked()
		p.mu.Unlock()
	}
}

// startOutcome says what a failed start call tells about the container.
type startOutcome int

const (
	// startRefused: the runner answered that it did not start it.
	startRefused startOutcome = iota
	// startNeverSent: no connection, or the runner could not be run
	// (runnerMissing): the runner never saw the request.
	startNeverSent
	// startUnknown: the call failed on the way (timeout, broken
	// connection); the runner may or may not have started it.
	startUnknown
)

// classifyBatchErr says what the error of a whole "runner batch" call of
// starts means for the containers in it.
func classifyBatchErr(err error) startOutcome {
	var ee *runner.ExitError
	switch {
	case errors.Is(err, runner.ErrNotSent) || runnerMissing(err):
		// Not an attempt: the next probe installs a missing runner
		// again (redeploy.go).
		return startNeverSent
	case errors.As(err, &ee) && ee.Code == 2:
		// A batch exits 2 only when it could not read its requests:
		// nothing started.
		return startRefused
	}
	// Failed on the way, or a batch that ended part way through: some
	// may have started.
	return startUnknown
}

// startDoneLocked records the end of a start call. err == nil means it
// started; otherwise outcome says what the error means.
func (p *Pool) startDoneLocked(w *instance, cid string, err error, outcome startOutcome) {
	i := slices.IndexFunc(w.starts, func(s startEntry) bool { return s.id == cid && s.doneSeq == 0 })
	if i < 0 || w.removed {
		return
	}
	p.stats.Starts++
	if err == nil {
		w.starts[i].doneSeq = p.nextSeqLocked()
		return
	}
	if outcome == startUnknown {
		// Only the runner's listing can tell: the first list issued after
		// now shows it running (started) or not (the scheduler then
		// returns it to the queue without counting an attempt). Reporting
		// a failure here would count an attempt for a start that may have
		// happened, and a later listing would then adopt it as a second.
		w.starts[i].doneSeq = p.nextSeqLocked()
		p.log.Warn("container start outcome unknown; the next runner list decides",
			"instance", string(w.v.ID), "container", cid, "error", err.Error())
		return
	}
	startSeq := w.starts[i].seq
	if j := findStatus(w.v.Reported, cid); j >= 0 && w.listSeq > startSeq && w.v.Reported[j].State == runner.StateRunning {
		// A list issued after the start shows the container running: it
		// started even though the call reported an error.
		w.starts[i].doneSeq = p.nextSeqLocked()
		return
	}
	p.stats.StartFailures++
	w.starts = slices.Delete(w.starts, i, i+1)
	if j := findStatus(w.v.Reported, cid); j < 0 || w.v.Reported[j].State != runner.StateRunning {
		w.v.Containers = slices.DeleteFunc(w.v.Containers, func(s string) bool { return s == cid })
		w.rowChanged()
	}
	w.updateBusy(p.clk.Now(), "a start failed")
	p.startFailures = append(p.startFailures, StartFailure{ContainerID: cid, InstanceID: w.v.ID, Err: err, NeverSent: outcome == startNeverSent})
	p.log.Warn("container start failed", "instance", string(w.v.ID), "container", cid, "error", err.Error())
	p.notifyLocked()
}

// TakeStartFailures returns and clears the start failures recorded since
// the last call.
func (p *Pool) TakeStartFailures() []StartFailure {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.startFailures
	p.startFailures = nil
	return f
}

// KillContainer sends TERM to a container now and, if a list issued after
// the TERM still reports it running once kill_grace has passed, KILL (once).
// Calls while a kill is pending do nothing. It reports whether it sent a
// new TERM.
func (p *Pool) KillContainer(id cloud.InstanceID, containerID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.byID[id]
	if w == nil || w.v.State == StateShutdown || !runner.ValidID(containerID) {
		return false
	}
	if slices.ContainsFunc(w.kills, func(k killEntry) bool { return k.id == containerID }) {
		return false // already being killed
	}
	if i := findStatus(w.v.Reported, containerID); i >= 0 && w.v.Reported[i].State == runner.StateExited &&
		!slices.Contains(w.v.Containers, containerID) {
		return false // already exited
	}
	now := p.clk.Now()
	w.kills = append(w.kills, killEntry{id: containerID, termAt: now, termSeq: p.nextSeqLocked()})
	p.sendSignalLocked(w, containerID, runner.SignalTerm)
	return true
}

// checkKillsLocked sends KILL to containers still reported running by a
// list issued after their TERM, once kill_grace has passed.
func (p *Pool) checkKillsLocked(w *instance, now time.Time) {
	for i := range w.kills {
		k := &w.kills[i]
		if k.killSent || now.Sub(k.termAt) < p.s.killGrace || w.listSeq < k.termSeq {
			continue
		}
		if j := findStatus(w.v.Reported, k.id); j < 0 || w.v.Reported[j].State != runner.StateRunning {
			continue
		}
		k.killSent = true
		p.sendSignalLocked(w, k.id, runner.SignalKill)
	}
}

func (p *Pool) sendSignalLocked(w *instance, cid, sig string) {
	p.stats.Kills++
	p.log.Info("killing container", "instance", string(w.v.ID), "container", cid, "signal", sig)
	p.goLocked(func() {
		exec, err := p.executor(w)
		if err == nil {
			err = p.mayAct()
		}
		if err == nil {
			client := p.runnerClient(exec)
			err = client.Kill(p.ctx, cid, sig)
			p.noteFenced(err)
		}
		if err != nil && !p.canceled() {
			p.log.Warn("runner kill failed", "instance", string(w.v.ID), "container", cid, "signal", sig, "error", err.Error())
		}
	})
}

// Logs returns a container's output from the runner on its instance (the
// last tail lines when tail > 0): at most containers.max_output of its end,
// as it is stored once it exits. It blocks on the runner call.
func (p *Pool) Logs(ctx context.Context, id cloud.InstanceID, containerID string, tail int) (runner.Output, error) {
	p.mu.Lock()
	w := p.byID[id]
	p.mu.Unlock()
	if w == nil {
		return runner.Output{}, ErrNotFound
	}
	exec, err := p.executor(w)
	if err != nil {
		return runner.Output{}, err
	}
	client := p.runnerClient(exec)
	return client.Logs(ctx, containerID, tail, p.s.maxOutput)
}

// logsRequest asks for the output of an exited container, to store.
func (p *Pool) logsRequest(containerID string) runner.Request {
	return runner.Request{Verb: "logs", ID: containerID, MaxBytes: p.s.maxOutput}
}

// fetchedOutput is the output a logs reply carries, cut to max_output
// should a runner have sent more than it was asked for: what the store
// keeps stays bounded whatever answers. started is its run's start.
func (p *Pool) fetchedOutput(r *runner.Reply, started time.Time) runner.Output {
	o := r.Output().Cut(p.s.maxOutput)
	o.Started = started
	return o
}

// runStartsLocked is when the runs of ids on w started, as w's runner
// last listed them: what tells the store one attempt's output from
// another's (a retried container keeps each, docs/design.md §10.1).
func runStartsLocked(w *instance, ids []string) map[string]time.Time {
	starts := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		if i, ok := sortedStatus(w.v.Reported, id); ok {
			starts[id] = w.v.Reported[i].StartedAt
		}
	}
	return starts
}
