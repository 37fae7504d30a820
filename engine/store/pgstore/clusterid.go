// The cluster id in the meta table, beside the pause flag; the parts'
// names for store copy.

package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ClusterID returns the cluster id the meta table keeps, "" while none.
func (s *Store) ClusterID() (string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var id string
	err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'cluster_id'`).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("read the cluster id: %w", err)
	}
	return id, nil
}

// KeepClusterID inserts id unless a row is there; one statement, so two
// dispatchers starting at once both read back the row that won.
func (s *Store) KeepClusterID(id string) (string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	kept, err := s.keepMeta(ctx, "cluster_id", id)
	if err != nil {
		return "", fmt.Errorf("keep the cluster id: %w", err)
	}
	return kept, nil
}

// keepMeta inserts value under key in meta unless a row is there, and
// returns the row that is: one statement, so two dispatchers starting at
// once both read back the one that won.
func (s *Store) keepMeta(ctx context.Context, key, value string) (string, error) {
	var kept string
	var err error
	// A row another start committed while this statement waited on it is
	// not in the statement's snapshot: the next statement sees it.
	for range 3 {
		err = s.pool.QueryRow(ctx, `WITH ins AS (
				INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value)
			SELECT value FROM ins UNION ALL SELECT value FROM meta WHERE key = $1`, key, value).Scan(&kept)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	return kept, err
}

// PartNames returns the parts that hold records, sorted.
func (s *Store) PartNames() ([]string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT part FROM parts GROUP BY part ORDER BY part COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list the parts: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the parts: %w", err)
	}
	return names, nil
}
