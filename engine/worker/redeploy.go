// Redeploying the runner binary of a ready instance when it is found
// missing (docs/design.md §6, §10.1): the default runner_path is under
// /tmp, where a temp cleaner may delete it while its containers run.

package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
)

// A failed install on an instance that answers is retried (an operator may
// free the disk or fix the directory), first after redeployRetryFirst,
// doubling up to redeployRetryMax; the probes in between only list.
const (
	redeployRetryFirst = 30 * time.Second
	redeployRetryMax   = 10 * time.Minute
)

// runnerMissing tells whether err, from a runner call, is the shell saying
// the runner binary cannot be run: 127, not found (deleted), or 126, found
// but not executable (its mode or contents changed). The instance
// answered: it is not unreachable.
func runnerMissing(err error) bool {
	var ee *runner.ExitError
	return errors.As(err, &ee) && (ee.Code == 127 || ee.Code == 126)
}

// runnerBrokenError is a probe's answer from an instance whose runner
// cannot be run and cannot be installed now.
type runnerBrokenError struct{ msg string }

func (e *runnerBrokenError) Error() string { return e.msg }

// redeployRunner installs the runner again on w, whose "runner list"
// failed with listErr, a runnerMissing error. nil means the runner is in
// place again (the caller lists again). An install that got an answer and
// failed is retried only after a growing delay: that error is a
// *runnerBrokenError, as is every error until the next try.
func (p *Pool) redeployRunner(pc *probeCall, w *instance, exec runner.Executor, client *runner.Client, listErr error) error {
	missing := "runner missing (" + listErr.Error() + ")"
	p.mu.Lock()
	now := p.clk.Now()
	fails, retry, lastErr := w.redeployFails, w.redeployRetry, w.v.LastError
	p.mu.Unlock()
	if fails > 0 && now.Before(retry) {
		return &runnerBrokenError{lastErr} // the failed install's message, with its next try
	}
	var installed bool
	var err error
	if p.opts.RunnerHash == "" {
		err = &deployError{fmt.Errorf("this dispatcher deploys no runner: install one at %s", p.s.runnerPath)}
	} else {
		installed, err = p.ensureRunner(pc, exec, client)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	now = p.clk.Now()
	if err == nil {
		msg := "runner at " + p.s.runnerPath + " installed again: " + missing
		if !installed {
			msg = "runner at " + p.s.runnerPath + " runs again without an install: " + missing
		}
		if fails > 0 {
			msg += fmt.Sprintf(", after %d failed installs", fails)
		}
		w.redeployFails = 0
		p.eventLocked(now, w.v.ID, EventRunnerRedeploy, msg, slog.LevelInfo)
		return nil
	}
	var de *deployError
	var ee *runner.ExitError
	if p.canceled() || (!errors.As(err, &de) && !errors.As(err, &ee)) {
		return err // no answer: unreachable after all
	}
	w.redeployFails++
	w.redeployRetry = now.Add(clock.Backoff(redeployRetryFirst, redeployRetryMax, w.redeployFails))
	msg := fmt.Sprintf("%s; cannot install it again: %v; next try after %s", missing, err, w.redeployRetry.Format(time.TimeOnly))
	if w.redeployFails == 1 {
		p.eventLocked(now, w.v.ID, EventRunnerRedeploy, msg, slog.LevelWarn)
	} else {
		p.log.Debug("runner redeploy failed", "instance", string(w.v.ID), "failures", w.redeployFails, "error", err.Error())
	}
	return &runnerBrokenError{msg}
}

// runnerBrokenLocked records a probe of w that got an answer but no list,
// as its runner cannot be run (msg says why): nothing starts there
// (ProbeFailing) and its containers stay as last listed, Running, until a
// list says otherwise. It is not unreachable: no unreachable_since, and
// neither timeout_probe nor timeout_unreachable counts, as they give up on
// containers that may still run; an idle one is shut down by timeout_idle.
func (p *Pool) runnerBrokenLocked(w *instance, now time.Time, msg string) {
	p.stats.ProbeFailures++
	w.v.ProbeError = msg
	w.v.LastError = msg
	w.v.ProbeFailing = true
	w.rowChanged()
	w.probeFailing = false
	w.hostKeyReported = false
	w.lastProbeOK = now
	if !w.v.UnreachableSince.IsZero() {
		p.eventLocked(now, w.v.ID, EventProbeOK, fmt.Sprintf("reachable again after %s (unreachable since %s), but its runner cannot run",
			now.Sub(w.v.UnreachableSince).Round(time.Second), w.v.UnreachableSince.Format(time.TimeOnly)), slog.LevelInfo)
		w.v.UnreachableSince = time.Time{}
	}
	p.notifyLocked()
}
