// An operator's shell on an instance, recorded as an event.

package engine

// A shell on an instance for an operator (the console's `s`), over the
// pool's own connection, recorded as an event with its actor.

import (
	"context"
	"fmt"
	"io"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/worker"
)

// Shell runs an interactive shell on instance id for actor, wired to in
// and out on a terminal of type term, until it exits or ctx ends. An
// instance shutting down or not ready yet is refused; the shell is an
// event ("verb", action "shell") before it starts.
func (e *Engine) Shell(ctx context.Context, id, actor, term string, cols, rows int, in io.Reader, out io.Writer) error {
	v, ok := e.Instance(id)
	if !ok {
		return instanceErr(id, worker.ErrNotFound)
	}
	switch v.State {
	case worker.StateShutdown, worker.StateBooting, worker.StateRefused, worker.StateForeign:
		return fmt.Errorf("instance %s is %s: no shell there", id, v.State)
	}
	if err := e.queue.AddEvent(actor, "verb", id, "shell", ""); err != nil {
		return fmt.Errorf("record the shell's event (not opened): %w", err)
	}
	e.notify()
	if err := e.pool.Shell(ctx, cloud.InstanceID(id), term, cols, rows, in, out); err != nil {
		return instanceErr(id, err)
	}
	return nil
}
