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

// Import writes b (records and events), the outputs (outputs[i] is
// ids[i]'s) and the pause flag in one transaction, into a database that
// holds none: an interrupted import leaves it empty, and can be run again.
func (s *Store) Import(b *store.Batch, ids []string, outputs [][]byte, paused bool) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The lock makes a second import wait, then find the first's rows.
		if _, err := tx.Exec(ctx, `LOCK TABLE containers, events, outputs IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		var used bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM containers) OR EXISTS (SELECT 1 FROM events) OR EXISTS (SELECT 1 FROM outputs)`).Scan(&used); err != nil {
			return err
		}
		if used {
			return ErrNotEmpty
		}
		if err := writeRecords(ctx, tx, b); err != nil {
			return err
		}
		if err := s.writeEvents(ctx, tx, b); err != nil {
			return err
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO outputs (id, body) SELECT * FROM unnest($1::text[], $2::bytea[])`, ids, outputs); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('paused', $1)`, fmt.Sprint(paused))
		return err
	})
}
