// Fencing the writes (docs/design.md §11): a write transaction of a node
// that leads first locks the lease row at its own epoch, so that a
// takeover, which locks the row for update, is ordered before or after
// every write, never across one.

package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/store"
)

// fence checks, first thing in a write transaction, that this node still
// leads with its epoch: by its own clock (Options.Fence), then in the
// lease row, which it keeps locked until the transaction ends. FOR KEY
// SHARE, not FOR SHARE: it waits for a takeover (Acquire locks the row
// FOR UPDATE) but not for the leader's own renewal, a plain UPDATE of
// columns no key covers, so a long flush never holds off the renewal that
// keeps its writer leading.
func (s *Store) fence(ctx context.Context, tx pgx.Tx) error {
	if s.opts.Fence == nil {
		return nil
	}
	mine, ok := s.opts.Fence()
	if !ok {
		return &store.FencedError{}
	}
	var got int64
	err := tx.QueryRow(ctx, `SELECT epoch FROM leader WHERE id = 1 AND epoch = $1 FOR KEY SHARE`, mine).Scan(&got)
	if err == nil {
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("check the leader lease: %w", err)
	}
	var cur int64
	if err := tx.QueryRow(ctx, `SELECT epoch FROM leader WHERE id = 1`).Scan(&cur); err != nil {
		return fmt.Errorf("check the leader lease: %w", err)
	}
	return &store.FencedError{Epoch: mine, Current: cur}
}
