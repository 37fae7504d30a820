// The error of a write refused because its writer no longer leads
// (docs/design.md §11, Fencing): one kind, whatever the store.

package store

import "fmt"

// FencedError is a write refused because the node making it no longer
// holds the leader lease: nothing of it was written, and retrying it
// cannot succeed. The node must stop acting as leader.
type FencedError struct {
	// Epoch is the epoch the write carried; 0 when the node had none to
	// give (its lease ran out on its own clock, or it stands by).
	Epoch int64
	// Current is the lease's epoch in the store when the write was
	// refused; 0 when the store was not asked.
	Current int64
}

func (e *FencedError) Error() string {
	if e.Epoch == 0 {
		return "store write refused: this node does not hold the leader lease (it stands by, or its lease ran out on its own clock); it must stop acting as leader"
	}
	return fmt.Sprintf("store write refused: this node leads with epoch %d but the lease is at epoch %d: another node took over, and this one must stop acting as leader", e.Epoch, e.Current)
}
