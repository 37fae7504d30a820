// Exit codes: the one table of the code each kind of error ends a client
// command with (README.md, "Exit codes").

package cli

import (
	"errors"

	"dispatch-tui/engine/view"
)

// Exit codes besides those of exitCodes: success and a usage error.
const (
	exitOK    = 0
	exitUsage = 2
)

// exitCodes is the exit code of each kind of error (view.Kind), as the
// server's status code or the engine's error says it. KindInvalid shares
// the usage error's code: what the command sent was refused.
var exitCodes = map[view.Kind]int{
	view.KindOther:    1,
	view.KindInvalid:  exitUsage,
	view.KindNotFound: 3,
	view.KindConflict: 4,
	view.KindNoFit:    5,
	view.KindGone:     6,
}

// exitCode is err's exit code by its kind.
func exitCode(err error) int { return exitCodes[view.KindOf(err)] }

// kindError is a message said of an error of a known kind: explain's
// advice on a server's error, or several failures of the same kind.
type kindError struct {
	msg  string
	kind view.Kind
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) ErrorKind() view.Kind { return e.kind }

// withKind is msg, of err's kind.
func withKind(msg string, err error) error {
	if k := view.KindOf(err); k != view.KindOther {
		return &kindError{msg, k}
	}
	return errors.New(msg)
}

// failures tallies the kinds of the failures of a command that tries
// several ids: the command ends with their kind's code when they share
// one, else 1.
type failures struct {
	n     int
	kind  view.Kind
	mixed bool
}

func (f *failures) add(err error) {
	k := view.KindOf(err)
	if f.n > 0 && k != f.kind {
		f.mixed = true
	}
	f.n++
	f.kind = k
}

// of is msg, of the failures' kind when they share one.
func (f *failures) of(msg string) error {
	if f.mixed {
		return errors.New(msg)
	}
	return &kindError{msg, f.kind}
}
