// Shells on instances, for the backends that can open one.

package backend

// A shell on an instance, for the backends that can open one (in process).

import (
	"context"
	"io"
)

// Sheller is a Backend that can open a shell on an instance over the
// dispatcher's own connection to it: the console that runs the engine
// (its operator). A console attached with --connect has none, so a
// viewer never gets one.
type Sheller interface {
	Shell(ctx context.Context, id, term string, cols, rows int, in io.Reader, out io.Writer) error
}

// Shell runs a shell on instance id for the console's user, recorded as
// an event with the console's actor.
func (b *InProcess) Shell(ctx context.Context, id, term string, cols, rows int, in io.Reader, out io.Writer) error {
	return b.eng.Shell(ctx, id, b.actor, term, cols, rows, in, out)
}
