// The leader lease (docs/design.md §11): the SQL of engine/ha's Lease on
// the leader row, every time the database's.

package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/ha"
)

var _ ha.Lease = (*Store)(nil)

// Acquire takes the lease when it has expired or is node's own: the
// epoch rises by one. It locks the row FOR UPDATE first, so it waits for
// the writes in flight under the old epoch (fence.go) and every later
// write sees the new one.
func (s *Store) Acquire(ctx context.Context, node, address string, lease time.Duration) (ha.Term, bool, error) {
	var t ha.Term
	var expiredFor float64
	err := s.pool.QueryRow(ctx, `WITH old AS (SELECT epoch, expires_at FROM leader WHERE id = 1 FOR UPDATE)
		UPDATE leader SET epoch = leader.epoch + 1, holder = $1, address = $2,
			renewed_at = now(), expires_at = now() + make_interval(secs => $3)
		FROM old
		WHERE leader.id = 1 AND (leader.expires_at <= now() OR leader.holder = $1)
		RETURNING leader.epoch, CASE WHEN old.epoch = 0 THEN 0 ELSE extract(epoch FROM now() - old.expires_at)::float8 END`,
		node, address, lease.Seconds()).Scan(&t.Epoch, &expiredFor)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another's: how long it has left, for the next try.
		var left float64
		if err := s.pool.QueryRow(ctx, `SELECT greatest(extract(epoch FROM expires_at - now()), 0)::float8 FROM leader WHERE id = 1`).Scan(&left); err == nil {
			t.Left = time.Duration(left * float64(time.Second))
		}
		return t, false, nil
	}
	if err != nil {
		return ha.Term{}, false, fmt.Errorf("acquire the leader lease: %w", err)
	}
	t.ExpiredFor = time.Duration(expiredFor * float64(time.Second))
	return t, true, nil
}

// Renew extends epoch's lease by lease from now.
func (s *Store) Renew(ctx context.Context, epoch int64, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE leader SET renewed_at = now(), expires_at = now() + make_interval(secs => $2)
		WHERE id = 1 AND epoch = $1`, epoch, lease.Seconds())
	if err != nil {
		return false, fmt.Errorf("renew the leader lease: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release ends epoch's lease now.
func (s *Store) Release(ctx context.Context, epoch int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE leader SET expires_at = now() WHERE id = 1 AND epoch = $1 AND expires_at > now()`, epoch); err != nil {
		return fmt.Errorf("release the leader lease: %w", err)
	}
	return nil
}

// Holder reads the lease row.
func (s *Store) Holder(ctx context.Context) (ha.Holder, error) {
	var h ha.Holder
	err := s.pool.QueryRow(ctx, `SELECT epoch, holder, address, renewed_at, expires_at, expires_at > now() FROM leader WHERE id = 1`).
		Scan(&h.Epoch, &h.Node, &h.Address, &h.RenewedAt, &h.ExpiresAt, &h.Valid)
	if err != nil {
		return ha.Holder{}, fmt.Errorf("read the leader lease: %w", err)
	}
	return h, nil
}
