package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
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
		if s.id == spec.ID {
			return nil // already starting
		}
	}
	now := p.clk.Now()
	w.starts = append(w.starts, startEntry{id: spec.ID, seq: p.nextSeqLocked()})
	if !slices.Contains(w.v.Containers, spec.ID) {
		w.v.Containers = append(w.v.Containers, spec.ID)
	}
	w.setState(StateRunning, "container start sent")
	w.v.LastContainer = spec.ID
	w.v.LastBusy = now
	p.notifyLocked()
	// Starts go out in "runner batch" calls, one sender per instance: a
	// start queued while a batch is in flight joins the next one.
	w.startQ = append(w.startQ, spec)
	if w.startBusy {
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
			client := runner.Client{Exec: exec, Path: p.s.runnerPath}
			errs, err = client.StartMany(p.ctx, specs)
			outcome = classifyBatchErr(err)
		}
		p.mu.Lock()
		for i := range specs {
			if err != nil {
				p.startDoneLocked(w, specs[i].ID, err, outcome)
			} else {
				p.startDoneLocked(w, specs[i].ID, errs[i], startRefused)
			}
		}
		w.nextProbe = time.Time{}
		p.notifyLocked()
		p.mu.Unlock()
	}
}

// startOutcome says what a failed start call tells about the container.
type startOutcome int

const (
	// startRefused: the runner answered that it did not start it.
	startRefused startOutcome = iota
	// startNeverSent: no connection, the runner never saw the request.
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
	case errors.Is(err, runner.ErrNotSent):
		return startNeverSent
	case errors.As(err, &ee) && (ee.Code == 2 || ee.Code == 126 || ee.Code == 127):
		// A batch exits 2 only when it could not read its requests,
		// 126/127 when the runner could not be run: nothing started.
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
			client := runner.Client{Exec: exec, Path: p.s.runnerPath}
			err = client.Kill(p.ctx, cid, sig)
		}
		if err != nil && !p.canceled() {
			p.log.Warn("runner kill failed", "instance", string(w.v.ID), "container", cid, "signal", sig, "error", err.Error())
		}
	})
}

// ForgetContainer asks the runner to forget an exited container; once done
// it is dropped from Reported. Calls while one is in flight do nothing.
func (p *Pool) ForgetContainer(id cloud.InstanceID, containerID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.byID[id]
	if w == nil || !runner.ValidID(containerID) {
		return
	}
	if _, ok := w.forgetting[containerID]; ok {
		return
	}
	if t, ok := w.logsRetry[containerID]; ok {
		if p.clk.Now().Before(t) {
			return // its output could not be stored just now
		}
		delete(w.logsRetry, containerID)
	}
	if w.v.State == StateShutdown {
		// Its runner goes away with it: just stop reporting the container.
		// Its output, if any, is stored before the destroy (collect.go).
		w.forgotten = append(w.forgotten, forgotEntry{id: containerID, seq: p.nextSeqLocked()})
		if i := findStatus(w.v.Reported, containerID); i >= 0 {
			w.v.Reported = slices.Delete(w.v.Reported, i, i+1)
			p.notifyLocked()
		}
		return
	}
	if w.forgetting == nil {
		w.forgetting = make(map[string]struct{})
	}
	w.forgetting[containerID] = struct{}{}
	// Like starts, forgets go out in "runner batch" calls, one sender per
	// instance.
	w.forgetQ = append(w.forgetQ, containerID)
	if w.forgetBusy {
		return
	}
	w.forgetBusy = true
	if !p.goLocked(func() { p.runForgetBatches(w) }) {
		w.forgetBusy = false
		w.forgetQ = w.forgetQ[:len(w.forgetQ)-1]
		delete(w.forgetting, containerID)
	}
}

// runForgetBatches sends w's queued forgets (after fetching the logs of
// those containers when OnLogs is set, and only for those whose output
// OnLogs stored) in "runner batch" calls until none are left.
func (p *Pool) runForgetBatches(w *instance) {
	for {
		p.mu.Lock()
		n := min(len(w.forgetQ), runner.MaxBatch)
		if n == 0 || p.canceled() {
			w.forgetBusy = false
			for _, id := range w.forgetQ {
				delete(w.forgetting, id)
			}
			w.forgetQ = nil
			if w.v.State == StateShutdown && !w.collectDone && !w.removed {
				// A shutdown was waiting for this batch to store output.
				p.collectLocked(w, p.clk.Now())
			}
			p.mu.Unlock()
			return
		}
		ids := slices.Clone(w.forgetQ[:n])
		w.forgetQ = slices.Delete(w.forgetQ, 0, n)
		p.mu.Unlock()

		errs := make([]error, len(ids))
		exec, err := p.executor(w)
		client := runner.Client{Exec: exec, Path: p.s.runnerPath}
		if err == nil && (p.opts.OnLogs != nil || p.opts.OnLogsBatch != nil) {
			reqs := make([]runner.Request, len(ids))
			for i, id := range ids {
				reqs[i] = runner.Request{Verb: "logs", ID: id, Tail: LogTailLines}
			}
			var replies []runner.Reply
			if replies, err = client.Batch(p.ctx, reqs); err == nil && p.opts.OnLogsBatch != nil {
				p.storeLogsBatch(ids, replies, errs)
			} else if err == nil {
				// Concurrently, so that a store batching its writes
				// (bbolt's Batch) commits them together.
				var wg sync.WaitGroup
				for i := range replies {
					if errs[i] = replies[i].Err("logs"); errs[i] == nil {
						wg.Go(func() {
							if serr := p.opts.OnLogs(ids[i], replies[i].Stdout); serr != nil {
								errs[i] = &storeError{err: serr}
							}
						})
					}
				}
				wg.Wait()
			}
		}
		if err == nil {
			var reqs []runner.Request
			var idx []int
			for i, id := range ids {
				if errs[i] == nil {
					reqs = append(reqs, runner.Request{Verb: "forget", ID: id})
					idx = append(idx, i)
				}
			}
			var replies []runner.Reply
			if replies, err = client.Batch(p.ctx, reqs); err == nil {
				for k := range replies {
					errs[idx[k]] = replies[k].Err("forget")
				}
			}
		}
		p.mu.Lock()
		now := p.clk.Now()
		// Those forgotten leave Reported and needLogs in one pass each
		// (a batch is up to 256 of several hundred).
		gone := make(map[string]struct{}, len(ids))
		for i, id := range ids {
			delete(w.forgetting, id)
			if w.removed || p.canceled() {
				continue
			}
			e := err
			if e == nil {
				e = errs[i]
			}
			if se := (*storeError)(nil); errors.As(e, &se) {
				p.logsNotStoredLocked(w, id, se, now)
				continue
			}
			if e != nil {
				p.log.Warn("runner forget failed", "instance", string(w.v.ID), "container", id, "error", e.Error())
				continue
			}
			w.forgotten = append(w.forgotten, forgotEntry{id: id, seq: p.nextSeqLocked()})
			gone[id] = struct{}{}
		}
		if len(gone) > 0 {
			// Stored and forgotten: a shutdown under way need not fetch it.
			w.needLogs = slices.DeleteFunc(w.needLogs, func(id string) bool { _, ok := gone[id]; return ok })
			w.v.Reported = slices.DeleteFunc(w.v.Reported, func(st runner.Status) bool { _, ok := gone[st.ID]; return ok })
			p.notifyLocked()
		}
		p.mu.Unlock()
	}
}

// storeLogsBatch hands the outputs of replies (the "logs" replies for ids)
// to OnLogsBatch in one call and sets errs[i] for each container whose
// output was not fetched or not stored.
func (p *Pool) storeLogsBatch(ids []string, replies []runner.Reply, errs []error) {
	var okIDs []string
	var outs [][]byte
	var at []int
	for i := range replies {
		if errs[i] = replies[i].Err("logs"); errs[i] == nil {
			okIDs = append(okIDs, ids[i])
			outs = append(outs, replies[i].Stdout)
			at = append(at, i)
		}
	}
	if len(okIDs) == 0 {
		return
	}
	for k, serr := range p.opts.OnLogsBatch(okIDs, outs) {
		if serr != nil {
			errs[at[k]] = &storeError{err: serr}
		}
	}
}

// LogTailLines is how many lines of an exited container's output are kept
// when the runner forgets it.
const LogTailLines = 1000

// Logs returns a container's output from the runner on its instance (the
// last tail lines when tail > 0). It blocks on the runner call.
func (p *Pool) Logs(ctx context.Context, id cloud.InstanceID, containerID string, tail int) ([]byte, error) {
	p.mu.Lock()
	w := p.byID[id]
	p.mu.Unlock()
	if w == nil {
		return nil, ErrNotFound
	}
	exec, err := p.executor(w)
	if err != nil {
		return nil, err
	}
	client := runner.Client{Exec: exec, Path: p.s.runnerPath}
	return client.Logs(ctx, containerID, tail)
}
