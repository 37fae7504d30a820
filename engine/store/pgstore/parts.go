// Parts: other packages' records (store.PartWrite) in the parts table,
// written in the flush's transaction.

package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/store"
)

// LoadPart calls fn with each record of part name, in the byte order of
// their keys (as bbolt keeps them; a part may rely on it).
func (s *Store) LoadPart(name string, fn func(key, value []byte) error) error {
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM parts WHERE part = $1 ORDER BY key COLLATE "C"`, name)
	if err != nil {
		return fmt.Errorf("load %s: %w", name, err)
	}
	defer rows.Close()
	var key string
	var value []byte
	for rows.Next() {
		if err := rows.Scan(&key, &value); err != nil {
			return fmt.Errorf("load %s: %w", name, err)
		}
		if err := fn([]byte(key), value); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load %s: %w", name, err)
	}
	return nil
}

// writeParts upserts and deletes ws's records in tx.
func writeParts(ctx context.Context, tx pgx.Tx, ws []store.PartWrite) error {
	for _, w := range ws {
		var putKeys, delKeys []string
		var values [][]byte
		for i, k := range w.Keys {
			if w.Values[i] == nil {
				delKeys = append(delKeys, k)
			} else {
				putKeys, values = append(putKeys, k), append(values, w.Values[i])
			}
		}
		if len(putKeys) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO parts (part, key, value) SELECT $1, * FROM unnest($2::text[], $3::bytea[])
				ON CONFLICT (part, key) DO UPDATE SET value = EXCLUDED.value`, w.Name, putKeys, values); err != nil {
				return fmt.Errorf("write %s: %w", w.Name, err)
			}
		}
		if len(delKeys) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM parts WHERE part = $1 AND key = ANY($2)`, w.Name, delKeys); err != nil {
				return fmt.Errorf("write %s: %w", w.Name, err)
			}
		}
	}
	return nil
}
