// Forgetting exited containers once their output is stored.

package worker

import (
	"errors"
	"slices"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// Forgetting exited containers. With an output store (OnLogsBatch) a
// container's output is fetched ("logs"), stored, and only
// then is the container forgotten, so nothing is lost (docs/design.md
// §10.1). Each instance has one sender working through its queue in
// batches, and the steps of consecutive batches overlap: while batch k's
// outputs are being stored, one runner call forgets batch k-1 and fetches
// batch k+1's outputs. A store is mostly a wait for the disk; taken in
// turn with the runner calls, it held exited containers on busy instances
// for seconds, each keeping its directory, so that starts there had to
// make new ones (docs/design.md §9).

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
	if _, listed := sortedStatus(w.v.Reported, containerID); !listed {
		// Forgotten already (a pass that read it before the forget ended
		// asks again), or a later list no longer shows it: asking the
		// runner would only fail, with a warning, after a "logs" call.
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
		delete(w.noticed, containerID)
		if i := findStatus(w.v.Reported, containerID); i >= 0 {
			w.v.Reported = slices.Delete(w.v.Reported, i, i+1)
			w.viewChanged()
			p.notifyLocked()
		}
		return
	}
	if w.forgetting == nil {
		w.forgetting = make(map[string]struct{})
	}
	w.forgetting[containerID] = struct{}{}
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

// outputStore is the store of one batch's outputs, running beside the
// sender's next runner call.
type outputStore struct {
	ids  []string
	errs []error // per container: why it is not to be forgotten
	done chan struct{}
}

// runForgetBatches works through w's forget queue until it is empty and
// nothing is in flight (see the top of this file).
func (p *Pool) runForgetBatches(w *instance) {
	keepOutput := p.opts.OnLogsBatch != nil
	var (
		toForget []string     // stored (or nothing to store): forgotten by the next call
		storing  *outputStore // nil when no store is running
	)
	for {
		p.mu.Lock()
		var ids []string
		var starts map[string]time.Time
		stop := p.canceled()
		if !stop {
			n := min(len(w.forgetQ), runner.MaxBatch)
			ids = slices.Clone(w.forgetQ[:n])
			w.forgetQ = slices.Delete(w.forgetQ, 0, n)
			starts = runStartsLocked(w, ids)
		}
		if stop || (len(ids) == 0 && len(toForget) == 0 && storing == nil) {
			p.mu.Unlock()
			if storing != nil {
				<-storing.done
			}
			p.mu.Lock()
			w.forgetBusy = false
			// Whatever is still queued or in flight is asked for again.
			for _, id := range w.forgetQ {
				delete(w.forgetting, id)
			}
			for _, id := range toForget {
				delete(w.forgetting, id)
			}
			if storing != nil {
				for _, id := range storing.ids {
					delete(w.forgetting, id)
				}
			}
			w.forgetQ = nil
			if w.v.State == StateShutdown && !w.collectDone && !w.removed {
				// A shutdown was waiting for this sender to store output.
				p.collectLocked(w, p.clk.Now())
			}
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if !keepOutput {
			toForget, ids = append(toForget, ids...), nil
		}

		// One runner call: forget the stored ones, fetch the next outputs.
		reqs := make([]runner.Request, 0, len(toForget)+len(ids))
		for _, id := range toForget {
			reqs = append(reqs, runner.Request{Verb: "forget", ID: id})
		}
		for _, id := range ids {
			reqs = append(reqs, p.logsRequest(id))
		}
		lead := len(toForget) // the logs replies follow the forget ones
		var replies []runner.Reply
		exec, err := p.executor(w)
		if err == nil && len(reqs) > 0 {
			client := p.runnerClient(exec)
			replies, err = client.Batch(p.ctx, reqs)
		}
		forgetErrs := make([]error, len(toForget))
		fetched := make([]error, len(ids))
		for i := range forgetErrs {
			if forgetErrs[i] = err; err == nil {
				forgetErrs[i] = replies[i].Err("forget")
			}
		}
		for i := range fetched {
			if fetched[i] = err; err == nil {
				fetched[i] = replies[lead+i].Err("logs")
			}
		}
		p.forgotten(w, toForget, forgetErrs)
		toForget = nil
		var outs []runner.Output
		if err == nil && len(ids) > 0 {
			// The runner defers what would take its reply past
			// runner.MaxBatchOutput: those go back to the queue's head,
			// for the next call.
			var deferred []string
			n := 0
			outs = make([]runner.Output, 0, len(ids))
			for i, id := range ids {
				r := &replies[lead+i]
				if r.Deferred() {
					deferred = append(deferred, id)
					continue
				}
				ids[n], fetched[n] = id, fetched[i]
				outs = append(outs, p.fetchedOutput(r, starts[id]))
				n++
			}
			ids, fetched = ids[:n], fetched[:n]
			if len(deferred) > 0 {
				p.mu.Lock()
				w.forgetQ = append(deferred, w.forgetQ...)
				p.mu.Unlock()
			}
		}

		// The store of the previous batch: what it stored is forgotten
		// next.
		if storing != nil {
			<-storing.done
			toForget = p.notForgotten(w, storing.ids, storing.errs)
			storing = nil
		}
		if len(ids) > 0 {
			storing = p.storeOutputs(ids, outs, fetched)
		}
	}
}

// storeOutputs stores outs, the outputs of ids, beside the sender; errs[i]
// is set where the output was not fetched, and is set by the store where
// it was not stored.
func (p *Pool) storeOutputs(ids []string, outs []runner.Output, errs []error) *outputStore {
	s := &outputStore{ids: ids, errs: errs, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		p.storeLogsBatch(ids, outs, errs)
	}()
	return s
}

// storeLogsBatch hands the fetched outputs (errs[i] == nil) to OnLogsBatch
// in one call and sets errs[i] for each that was not stored.
func (p *Pool) storeLogsBatch(ids []string, outs []runner.Output, errs []error) {
	var okIDs []string
	var okOuts []runner.Output
	var at []int
	for i := range ids {
		if errs[i] == nil {
			okIDs = append(okIDs, ids[i])
			okOuts = append(okOuts, outs[i])
			at = append(at, i)
		}
	}
	if len(okIDs) == 0 {
		return
	}
	for k, serr := range p.opts.OnLogsBatch(okIDs, okOuts) {
		if serr != nil {
			errs[at[k]] = &storeError{err: serr}
		}
	}
}

// notForgotten takes out of the sender's hands the containers of ids
// whose output was not fetched or not stored (errs[i] set), and returns
// the others, to be forgotten.
func (p *Pool) notForgotten(w *instance, ids []string, errs []error) []string {
	var ok []string
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	for i, id := range ids {
		e := errs[i]
		if e == nil {
			ok = append(ok, id)
			continue
		}
		delete(w.forgetting, id)
		if w.removed || p.canceled() {
			continue
		}
		if se := (*storeError)(nil); errors.As(e, &se) {
			p.logsNotStoredLocked(w, id, se, now)
			continue
		}
		p.forgetFailedLocked(w, id, e)
	}
	return ok
}

// forgetFailedLocked logs a failed forget of id: a warning the first time
// it fails so, at debug level while it fails the same way again.
func (p *Pool) forgetFailedLocked(w *instance, id string, err error) {
	msg := err.Error()
	if w.forgetWarned[id] == msg {
		p.log.Debug("runner forget failed again", "instance", string(w.v.ID), "container", id, "error", msg)
		return
	}
	if w.forgetWarned == nil {
		w.forgetWarned = map[string]string{}
	}
	w.forgetWarned[id] = msg
	p.log.Warn("runner forget failed", "instance", string(w.v.ID), "container", id, "error", msg)
}

// forgotten records the outcome of forgetting ids (errs[i] set where it
// failed): those forgotten leave Reported and needLogs, in one pass each.
func (p *Pool) forgotten(w *instance, ids []string, errs []error) {
	if len(ids) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	gone := make(map[string]struct{}, len(ids))
	for i, id := range ids {
		delete(w.forgetting, id)
		if w.removed || p.canceled() {
			continue
		}
		if errs[i] != nil {
			p.forgetFailedLocked(w, id, errs[i])
			continue
		}
		delete(w.forgetWarned, id)
		w.forgotten = append(w.forgotten, forgotEntry{id: id, seq: p.nextSeqLocked()})
		delete(w.noticed, id)
		gone[id] = struct{}{}
	}
	if len(gone) > 0 {
		// Stored and forgotten: a shutdown under way need not fetch it.
		w.needLogs = slices.DeleteFunc(w.needLogs, func(id string) bool { _, ok := gone[id]; return ok })
		if n := len(w.v.Reported); n > 0 {
			w.v.Reported = slices.DeleteFunc(w.v.Reported, func(st runner.Status) bool { _, ok := gone[st.ID]; return ok })
			if len(w.v.Reported) != n {
				w.viewChanged()
			}
		}
		p.notifyLocked()
	}
}
