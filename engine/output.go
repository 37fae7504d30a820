// Storing containers' output, and counting what could not be stored.

package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// outputCounters count the containers whose output could not be stored,
// for metrics (LogsStats).
type outputCounters struct {
	storeFailures atomic.Uint64
	lost          atomic.Uint64
	truncated     atomic.Uint64 // truncation.go

	// runs orders the stores of a retried container's output: each reads
	// the runs stored and adds its own (queue.StoredOutput.Add), under
	// the write lock, while the stores of first attempts, which replace,
	// share the read lock: pool goroutines of several instances store at
	// once, and two runs of one container may be fetched from two.
	runs sync.RWMutex
}

// LogsStats are the engine's counts of output not stored.
type LogsStats struct {
	// StoreFailures: containers whose output could not be written to the
	// store (counted once per container and error until it is stored).
	StoreFailures uint64
	// Lost: containers whose output can no longer be stored (their
	// instance went away first).
	Lost uint64
	// Truncated: containers whose stored output was cut to
	// [containers] max_output (counted once per container and cut).
	Truncated uint64
}

// LogsStats returns the counts of output not stored.
func (e *Engine) LogsStats() LogsStats {
	return LogsStats{StoreFailures: e.output.storeFailures.Load(), Lost: e.output.lost.Load(), Truncated: e.output.truncated.Load()}
}

// storeLogsBatch keeps exited containers' outputs, in one store
// transaction, before their runner forgets them or their instance is
// destroyed; called from a pool goroutine that holds no lock. When the
// store fails (a full disk), each record, an event and a counter say so,
// and the errors tell the pool to leave the outputs on the runner: a later
// forget stores them.
func (e *Engine) storeLogsBatch(ids []string, outputs []runner.Output) []error {
	errs := make([]error, len(ids))
	retried := e.queue.Retried(ids)
	if slices.Contains(retried, true) {
		e.output.runs.Lock()
		defer e.output.runs.Unlock()
	} else {
		e.output.runs.RLock()
		defer e.output.runs.RUnlock()
	}
	stored, err := e.withEarlierRuns(ids, outputs, retried)
	var data [][]byte
	if err == nil {
		data, err = e.noteTruncations(ids, stored)
	}
	if err == nil {
		err = e.queue.StoreLogsBatch(ids, data)
	}
	if err != nil {
		for i, id := range ids {
			errs[i] = e.logsNotStored(id, err)
		}
		return errs
	}
	for _, id := range ids {
		e.queue.SetLogsError(id, "")
	}
	return errs
}

// withEarlierRuns is what to store for each of ids: outputs[i] alone, or,
// for a container started more than once (retried[i]), added to the runs
// already stored, so that every attempt's output is kept (docs/design.md
// §10.1). Called under output.runs' write lock when one is retried.
func (e *Engine) withEarlierRuns(ids []string, outputs []runner.Output, retried []bool) ([]queue.StoredOutput, error) {
	stored := make([]queue.StoredOutput, len(ids))
	for i, out := range outputs {
		if !retried[i] {
			stored[i] = queue.NewStoredOutput(out)
			continue
		}
		earlier, _, err := e.queue.StoredOutput(ids[i])
		if err != nil {
			return nil, fmt.Errorf("read the output stored of %s's earlier runs: %w", ids[i], err)
		}
		stored[i] = earlier.Add(out, e.cfg.Containers.MaxOutput)
	}
	return stored, nil
}

// withRunNotStored is stored with the output of c's last run added when
// c is final, has run more than once, and the runner of its last attempt
// still keeps that run's output, not yet stored: logs read between the
// exit and the store shows every run, as after the store.
func (e *Engine) withRunNotStored(ctx context.Context, c view.Container, stored queue.StoredOutput) queue.StoredOutput {
	if !c.State.Final() || c.Attempts < 2 || c.InstanceID == "" {
		return stored
	}
	inst := cloud.InstanceID(c.InstanceID)
	v, ok := e.pool.Instance(inst)
	if !ok || v.ProbeFailing {
		return stored
	}
	i := slices.IndexFunc(v.Reported, func(st runner.Status) bool { return st.ID == c.ID && st.State == runner.StateExited })
	if i < 0 || stored.Has(v.Reported[i].StartedAt) {
		return stored
	}
	rctx, cancel := context.WithTimeout(ctx, runnerLogsTimeout)
	defer cancel()
	out, err := e.pool.Logs(rctx, inst, c.ID, 0)
	if err != nil {
		return stored // stored meanwhile, or unreachable: what is stored
	}
	out.Started = v.Reported[i].StartedAt
	return stored.Add(out, e.cfg.Containers.MaxOutput)
}

// logsNotStored records that id's output could not be stored (err) and
// returns err.
func (e *Engine) logsNotStored(id string, err error) error {
	msg := "logs: not stored: " + rootCause(err)
	if e.queue.SetLogsError(id, msg) {
		e.output.storeFailures.Add(1)
		e.queue.AppendEvent("pool", "logs_error", id, "not_stored", msg+" (kept on its instance; retried)")
	}
	e.log.Error("store container output", "container", id, "err", err)
	return err
}

// logsLost records that a container's output can no longer be stored.
func (e *Engine) logsLost(id, why string) {
	msg := "logs: lost: " + why
	if e.queue.SetLogsError(id, msg) {
		e.output.lost.Add(1)
		e.queue.AppendEvent("pool", "logs_error", id, "lost", msg)
	}
	e.log.Warn("container output lost", "container", id, "why", why)
}

// rootCause is the text of the system error under err when there is one
// ("no space left on device"), else err's text.
func rootCause(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
