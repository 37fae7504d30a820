// The leader's guard a context carries to the drivers: asked before each
// send of a cloud mutation, not once per call (docs/design.md §11).

package cloud

import "context"

type guardKey struct{}

// WithGuard returns ctx carrying may: a driver that sends a create,
// destroy or tag write more than once in one call (a retry, the next
// subnet) asks it before each send, and sends nothing more once it
// returns an error (this node's lease as leader may have run out).
func WithGuard(ctx context.Context, may func() error) context.Context {
	return context.WithValue(ctx, guardKey{}, may)
}

// Guard is nil when ctx carries no guard or its guard allows a send now.
func Guard(ctx context.Context) error {
	if may, ok := ctx.Value(guardKey{}).(func() error); ok {
		return may()
	}
	return nil
}
