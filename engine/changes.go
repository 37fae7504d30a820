// The containers and the instances that changed since a generation, for
// readers that keep a copy (an attached console): docs/design.md §7.2.

package engine

import (
	"context"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// ContainerChanges returns up to limit containers changed after generation
// since (every container for since 0) and the ids of those dropped; see
// queue.ChangesSince (its views share the records' maps: read them only).
func (e *Engine) ContainerChanges(since uint64, limit int) (queue.Changes, error) {
	return e.queue.ChangesSince(since, limit)
}

// ContainerChangesEach is ContainerChanges handing the views to each a
// chunk at a time; see queue.ChangesEach.
func (e *Engine) ContainerChangesEach(since uint64, limit int, each func([]view.Container)) (queue.Changes, error) {
	return e.queue.ChangesEach(since, limit, each)
}

// WaitContainerChanges returns once a container changed after generation
// since, or ctx ended: the long poll of a watching reader.
func (e *Engine) WaitContainerChanges(ctx context.Context, since uint64) bool {
	return e.queue.WaitChanges(ctx, since)
}

// InstanceChanges returns up to limit instance rows (as Instances lists
// them) changed after generation since (every row for since 0) and the
// ids of those removed; see worker.Pool.ChangesSince.
func (e *Engine) InstanceChanges(since uint64, limit int) (worker.Changes, error) {
	return e.pool.ChangesSince(since, limit)
}

// WaitInstanceChanges returns once an instance row changed after
// generation since, or ctx ended: the long poll of a watching reader.
func (e *Engine) WaitInstanceChanges(ctx context.Context, since uint64) bool {
	return e.pool.WaitChanges(ctx, since)
}
