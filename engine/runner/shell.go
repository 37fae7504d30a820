// The executor that can also open an interactive shell.

package runner

// The executor that can also open an interactive shell (the console's `s`).

import (
	"context"
	"io"
)

// ShellExecutor is an Executor that can also open an interactive shell on
// its instance, over the same connection (the console's `s`).
type ShellExecutor interface {
	Executor
	// Shell runs the login shell on a terminal of type term and size
	// cols×rows, wired to in and out, until it exits or ctx ends. The
	// shell's own exit status is not an error.
	Shell(ctx context.Context, term string, cols, rows int, in io.Reader, out io.Writer) error
}
