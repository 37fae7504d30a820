// A shell on an instance over the pool's own connection.

package worker

// A shell on an instance over the pool's own connection to it (the
// console's `s`, through Engine.Shell).

import (
	"context"
	"errors"
	"io"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// ErrNoShell: the instance's executor cannot open a shell (the in-memory
// fake driver's).
var ErrNoShell = errors.New("this driver's instances have no shell")

// Shell runs an interactive shell on instance id over the pool's own
// connection to it (the console's `s`), until it exits or ctx ends. The
// call deadline of runner calls does not apply: the operator ends it.
func (p *Pool) Shell(ctx context.Context, id cloud.InstanceID, term string, cols, rows int, in io.Reader, out io.Writer) error {
	p.mu.Lock()
	w := p.byID[id]
	p.mu.Unlock()
	if w == nil {
		return ErrNotFound
	}
	exec, err := p.executor(w)
	if err != nil {
		return err
	}
	// Under the call deadlines (deadline.go), whichever sides they keep.
	if b, ok := exec.(interface{ unbounded() runner.Executor }); ok {
		exec = b.unbounded()
	}
	sh, ok := exec.(runner.ShellExecutor)
	if !ok {
		return ErrNoShell
	}
	return sh.Shell(ctx, term, cols, rows, in, out)
}
