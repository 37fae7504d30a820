// The nodes table (docs/design.md §11): each node's heartbeat, on the
// database's clock, and the secret by which nodes know each other's
// forwarded requests.

package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/view"
)

var _ ha.Roster = (*Store)(nil)

// Beat records b as node b.Node's latest heartbeat, seen now.
func (s *Store) Beat(ctx context.Context, b ha.Beat) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO nodes (name, role, address, epoch, last_seen, tls_fingerprint) VALUES ($1, $2, $3, $4, now(), $5)
		ON CONFLICT (name) DO UPDATE SET role = excluded.role, address = excluded.address, epoch = excluded.epoch,
			last_seen = excluded.last_seen, tls_fingerprint = excluded.tls_fingerprint`,
		b.Node, b.Role, b.Address, b.Epoch, b.Fingerprint)
	if err != nil {
		return fmt.Errorf("record the heartbeat of node %s: %w", b.Node, err)
	}
	return nil
}

// Nodes lists every node that has beaten, by name.
func (s *Store) Nodes(ctx context.Context) ([]view.ClusterNode, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, role, address, epoch, last_seen, tls_fingerprint FROM nodes ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read the nodes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (view.ClusterNode, error) {
		var n view.ClusterNode
		err := r.Scan(&n.Name, &n.Role, &n.Address, &n.Epoch, &n.LastSeen, &n.TLSFingerprint)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the nodes: %w", err)
	}
	return out, nil
}

// PeerSecret returns the secret the cluster's nodes present to each other
// when one forwards a request to the leader, making it at the first call:
// whoever can read the store is trusted by the cluster anyway.
func (s *Store) PeerSecret(ctx context.Context) (string, error) {
	raw := make([]byte, 32)
	rand.Read(raw)
	mine := hex.EncodeToString(raw)
	kept, err := s.keepMeta(ctx, "peer_secret", mine)
	if err != nil {
		return "", fmt.Errorf("read the cluster's peer secret: %w", err)
	}
	return kept, nil
}
