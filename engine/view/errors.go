// Kinds of error: what went wrong with a request, as each edge tells it
// (the API's status code, the CLI's exit code, the console's flash).

package view

import "errors"

// Kind classes an error for the edges. The engine's typed errors say
// their kind (Kinded); the API maps a kind to a status code and back, the
// CLI to an exit code, each in one table.
type Kind int

// The kinds. KindOther is any error that says no kind: a failure of the
// dispatcher or of the way to it.
const (
	KindOther    Kind = iota
	KindInvalid       // a request field's value is refused (docs name the field)
	KindNotFound      // no such container, instance or verb
	KindConflict      // the target's state forbids the verb: finished, shutting down, another dispatcher's
	KindNoFit         // no configured instance type can hold the container
	KindGone          // what the request follows on from is no longer kept: start again (changes since an old generation)
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not found"
	case KindConflict:
		return "conflict"
	case KindNoFit:
		return "no fit"
	case KindGone:
		return "gone"
	}
	return "other"
}

// Kinded is an error that says its kind.
type Kinded interface {
	error
	ErrorKind() Kind
}

// KindOf is the kind of the first error in err's tree that says one,
// else KindOther.
func KindOf(err error) Kind {
	var k Kinded
	if errors.As(err, &k) {
		return k.ErrorKind()
	}
	return KindOther
}

// NewError returns an error of kind k with message msg: for sentinels
// (errors.Is finds them by identity).
func NewError(k Kind, msg string) error { return &kindError{k, msg} }

type kindError struct {
	kind Kind
	msg  string
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) ErrorKind() Kind { return e.kind }
