// An engine run as one node's term of leadership (docs/design.md §11):
// the epoch its runner calls carry, the lease it asks before acting, and
// what tells it a newer leader exists.

package engine

import (
	"errors"

	"dispatch-tui/engine/store"
)

// Leader makes an engine one term of a node's leadership. Without it
// (a single dispatcher) the engine acts with epoch 0 and asks no lease.
type Leader struct {
	// Epoch is the term's: every runner call carries it.
	Epoch int64
	// MayAct is asked right before every cloud mutation and runner start
	// or kill (the elector's Token): false, and it is not sent.
	MayAct func() bool
	// Fenced is told when a store write or a runner refused the epoch:
	// another node leads, and this engine must stop. Any goroutine; it
	// must not block.
	Fenced func(error)
}

// fencedWrites wraps a store write so that a refusal for the epoch
// reaches the leader's Fenced.
func (l *Leader) fencedWrites(write func() error) func() error {
	if l == nil || l.Fenced == nil {
		return write
	}
	return func() error {
		err := write()
		var fe *store.FencedError
		if errors.As(err, &fe) {
			l.Fenced(err)
		}
		return err
	}
}

// Note appends an event to the log, as actor (the leader's own notes:
// leader_elected, leader_lost, fenced).
func (e *Engine) Note(actor, kind, target, action, reason string) {
	e.queue.AppendEvent(actor, kind, target, action, reason)
	e.notify()
}
