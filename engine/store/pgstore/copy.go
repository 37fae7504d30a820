// Moving in: an embedded store's contents written into an empty database
// in one transaction, then read back and compared.

package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/store"
)

// ErrNotEmpty is a copy's target that already holds a queue.
var ErrNotEmpty = errors.New("the database already holds containers, events or output: store copy moves a queue into an empty database only")

// Import writes c (records, events, outputs, the pause flag, the cluster
// id and the parts) in one transaction, into a database that holds no
// queue: an interrupted import leaves it empty, and can be run again.
func (s *Store) Import(c store.Contents) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := c.Batch()
	ids := make([]string, 0, len(c.Outputs))
	outputs := make([][]byte, 0, len(c.Outputs))
	for id, out := range c.Outputs {
		ids, outputs = append(ids, id), append(outputs, out)
	}
	outputs = emptyNotNull(outputs)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The lock makes a second import wait, then find the first's rows.
		if _, err := tx.Exec(ctx, `LOCK TABLE containers, events, outputs, parts IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		var used bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM containers) OR EXISTS (SELECT 1 FROM events) OR EXISTS (SELECT 1 FROM outputs) OR EXISTS (SELECT 1 FROM parts)`).Scan(&used); err != nil {
			return err
		}
		if used {
			return ErrNotEmpty
		}
		if err := s.writeBatch(ctx, tx, b); err != nil {
			return err
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO outputs (id, body) SELECT * FROM unnest($1::text[], $2::bytea[])`, ids, outputs); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		if c.ClusterID != "" {
			// A dispatcher started on the empty database before the copy
			// made up an id of its own: the copied store's is the one its
			// instances are tagged with.
			if _, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('cluster_id', $1)
				ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, c.ClusterID); err != nil {
				return fmt.Errorf("write the cluster id: %w", err)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('paused', $1)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, fmt.Sprint(c.Paused))
		return err
	})
}
