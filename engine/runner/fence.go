// Fencing at the runner (docs/design.md §11): every call of a dispatcher
// that leads a cluster carries its epoch, and a runner refuses one lower
// than the highest it has seen: its caller was deposed.

package runner

import (
	"errors"
	"fmt"
)

// CodeFenced is the exit code (and batch reply code) of a call refused
// for its epoch (EX_NOPERM).
const CodeFenced = 77

// CheckEpoch decides a call carrying epoch on a runner that has seen
// seen at most: refused when it is lower, else the highest epoch seen
// from now on. Epoch 0 (a single dispatcher, or a tool) is neither
// checked nor recorded.
func CheckEpoch(epoch, seen int64) (highest int64, refused bool) {
	if epoch == 0 {
		return seen, false
	}
	if epoch < seen {
		return seen, true
	}
	return epoch, false
}

// FencedMessage is what a runner says when it refuses verb for its epoch.
func FencedMessage(verb string, epoch, seen int64) string {
	return fmt.Sprintf("runner %s: refused: the caller's epoch %d is lower than epoch %d this runner has seen: the caller is no longer the cluster's leader", verb, epoch, seen)
}

// IsFenced reports whether err is a runner's refusal of a call for its
// epoch.
func IsFenced(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Code == CodeFenced
}
