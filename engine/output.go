// Storing containers' output, and counting what could not be stored.

package engine

import (
	"errors"
	"sync/atomic"
	"syscall"

	"dispatch-tui/engine/runner"
)

// outputCounters count the containers whose output could not be stored,
// for metrics (LogsStats).
type outputCounters struct {
	storeFailures atomic.Uint64
	lost          atomic.Uint64
	truncated     atomic.Uint64 // truncation.go
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
	data, err := e.noteTruncations(ids, outputs)
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
