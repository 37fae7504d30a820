// Storing the output of exited containers before their instance is destroyed.

package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"dispatch-tui/engine/runner"
)

// collectRetryAfter is how long a shutdown waits between attempts to fetch
// and store the output of its exited containers.
const collectRetryAfter = time.Second

// collectLocked stores the output of w's exited containers before w is
// destroyed (docs/design.md §10.1), whatever the reason of the shutdown:
// the destroy deletes the runner's files. It waits for a forget batch in
// flight (it stores output too), retries a failed fetch or store until
// timeout_shutdown has passed since the shutdown, and gives up at once on
// a host whose probes were failing when the fetch fails too; what it gives
// up on goes to OnLogsLost. Once done, it starts the destroy.
func (p *Pool) collectLocked(w *instance, now time.Time) {
	if w.collecting || w.forgetBusy || now.Before(w.collectRetry) {
		return // Step calls again
	}
	if p.opts.OnLogsBatch == nil || len(w.needLogs) == 0 {
		w.needLogs = nil
		w.collectDone = true
		p.startDestroyLocked(w, now)
		return
	}
	w.collecting = true
	ids := slices.Clone(w.needLogs)
	starts := runStartsLocked(w, ids)
	unreachable := w.probeFailing
	if !p.goLocked(func() { p.collect(w, ids, starts, unreachable) }) {
		w.collecting = false
	}
}

// collect fetches and stores the output of ids, exited containers on w
// whose runs started at starts, while w is shutting down, then decides
// whether w may be destroyed.
func (p *Pool) collect(w *instance, ids []string, starts map[string]time.Time, unreachable bool) {
	stored := make([]bool, len(ids))
	errs := make([]error, len(ids))
	exec, err := p.executor(w)
	if err == nil {
		// A bound of its own: a dead connection must not hold the destroy.
		ctx, cancel := context.WithTimeout(p.ctx, p.s.timeoutShutdown)
		client := p.runnerClient(exec)
		// Calls follow one another while the runner defers some logs
		// (runner.MaxBatchOutput); each call's outputs are stored before
		// the next, so that at most one call's are held.
		todo := make([]int, len(ids))
		for i := range todo {
			todo[i] = i
		}
		for len(todo) > 0 && err == nil {
			reqs := make([]runner.Request, len(todo))
			for k, i := range todo {
				reqs[k] = p.logsRequest(ids[i])
			}
			var replies []runner.Reply
			if replies, err = client.Batch(ctx, reqs); err != nil {
				break
			}
			var next, got []int
			var gotIDs []string
			var outs []runner.Output
			var gotErrs []error
			for k, i := range todo {
				r := &replies[k]
				if r.Deferred() {
					next = append(next, i)
					continue
				}
				got = append(got, i)
				gotIDs = append(gotIDs, ids[i])
				outs = append(outs, p.fetchedOutput(r, starts[ids[i]]))
				gotErrs = append(gotErrs, r.Err("logs"))
			}
			p.storeLogsBatch(gotIDs, outs, gotErrs)
			for k, i := range got {
				errs[i] = gotErrs[k]
				stored[i] = gotErrs[k] == nil
			}
			todo = next
		}
		cancel()
	}

	p.mu.Lock()
	w.collecting = false
	if p.canceled() {
		// The pool stops: the instance is not destroyed, and a restarted
		// dispatcher finds the output on its runner.
		p.mu.Unlock()
		return
	}
	now := p.clk.Now()
	var lost []lostOutput
	if w.removed {
		// Gone from the provider's listing meanwhile.
		for i, id := range ids {
			if !stored[i] {
				lost = append(lost, lostOutput{id, fmt.Sprintf("instance %s disappeared before its output could be stored", w.v.ID)})
			}
		}
		w.needLogs = nil
		p.mu.Unlock()
		p.reportLost(w, lost)
		return
	}
	for i, id := range ids {
		if !stored[i] && !isNoSuchContainer(errs[i]) {
			continue
		}
		w.needLogs = slices.DeleteFunc(w.needLogs, func(s string) bool { return s == id })
		if !stored[i] {
			lost = append(lost, lostOutput{id, fmt.Sprintf("the runner on %s no longer has it", w.v.ID)})
		}
	}
	giveUp := !now.Before(w.collectStart.Add(p.s.timeoutShutdown)) || (err != nil && unreachable)
	if len(w.needLogs) > 0 && !giveUp {
		w.collectRetry = now.Add(collectRetryAfter)
		p.mu.Unlock()
		return
	}
	for _, id := range w.needLogs {
		e := err
		if i := slices.Index(ids, id); i >= 0 && e == nil {
			e = errs[i]
		}
		why := fmt.Sprintf("instance %s was shut down (%s) before its output could be stored", w.v.ID, w.shutdownReason)
		if unreachable && err != nil {
			why = fmt.Sprintf("instance %s was shut down (%s) while unreachable", w.v.ID, w.shutdownReason)
		}
		if e != nil {
			why += ": " + e.Error()
		}
		lost = append(lost, lostOutput{id, why})
	}
	w.needLogs = nil
	w.collectDone = true
	p.startDestroyLocked(w, now)
	p.mu.Unlock()
	p.reportLost(w, lost)
}

// lostOutput is a container whose output can no longer be stored, and why.
type lostOutput struct{ id, why string }

// reportLost logs and hands to OnLogsLost the output lost on w. The pool's
// lock must not be held.
func (p *Pool) reportLost(w *instance, lost []lostOutput) {
	for _, l := range lost {
		p.log.Warn("container output lost", "instance", string(w.v.ID), "container", l.id, "why", l.why)
		if p.opts.OnLogsLost != nil {
			p.opts.OnLogsLost(l.id, l.why)
		}
	}
}

// storeError is a store failure (OnLogsBatch, OnLogs): the output was fetched but not stored.
type storeError struct{ err error }

func (e *storeError) Error() string { return "not stored: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// isNoSuchContainer reports whether a runner reply says it does not have
// the container (forgotten already, or its state was lost).
func isNoSuchContainer(err error) bool {
	var ee *runner.ExitError
	return errors.As(err, &ee) && ee.Code == 1 && strings.Contains(ee.Stderr, "no such container")
}

// logsNotStoredLocked records that the output of cid on w could not be
// stored: the runner keeps it, and no forget fetches it again before
// logsRetryAfter has passed.
func (p *Pool) logsNotStoredLocked(w *instance, cid string, err error, now time.Time) {
	if w.logsRetry == nil {
		w.logsRetry = make(map[string]time.Time)
	}
	w.logsRetry[cid] = now.Add(logsRetryAfter)
	p.log.Log(context.Background(), slog.LevelWarn, "container output not stored; its runner keeps it",
		"instance", string(w.v.ID), "container", cid, "error", err.Error())
}

// logsRetryAfter: after its output could not be stored, a container's
// output is fetched again (on its next forget) after this long.
const logsRetryAfter = 5 * time.Second
