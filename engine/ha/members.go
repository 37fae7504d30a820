// Membership: each node's heartbeat in the nodes table, every lease_retry,
// and its latest reading of the lease, which tells a standby where to
// forward requests (docs/design.md §11).

package ha

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"dispatch-tui/engine/view"
)

// Roster is the nodes table of the store; every time in it is the
// database's.
type Roster interface {
	// Beat records b as its node's latest heartbeat, seen now.
	Beat(ctx context.Context, b Beat) error
	// Nodes lists every node that has ever beaten, with its last beat.
	Nodes(ctx context.Context) ([]view.ClusterNode, error)
}

// Beat is one heartbeat: who, in which role, reached where (and by
// which certificate), having seen which epoch.
type Beat struct {
	Node, Role, Address string
	Epoch               int64
	Fingerprint         string // hex SHA-256 of the API's certificate; "" without TLS
}

// MembersOptions configure Members.
type MembersOptions struct {
	Node    string
	Address string
	// Fingerprint is the hex SHA-256 of the certificate this node's API
	// serves ("" over plain HTTP): the standbys pin it to forward here.
	Fingerprint string
	Retry       time.Duration // how often to beat and read the lease
	// Token is the elector's Token: whether this node leads, and with
	// which epoch.
	Token func() (int64, bool)
	Log   *slog.Logger // nil: slog.Default()
}

// Members beats for one node and keeps its latest reading of the lease.
// Step (or Run) is its one writer; the other methods may be called from
// any goroutine (they serve the API).
type Members struct {
	opts   MembersOptions
	roster Roster
	lease  Lease
	holder atomic.Pointer[Holder] // the lease as last read; nil before
	// pins are the nodes' certificate fingerprints as last read, by name.
	pins atomic.Pointer[map[string]string]
}

// NewMembers returns the membership of one node.
func NewMembers(roster Roster, lease Lease, opts MembersOptions) *Members {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Members{opts: opts, roster: roster, lease: lease}
}

// Step reads the lease and beats once. A standby beats with the epoch it
// read; the leader with its own.
func (m *Members) Step(ctx context.Context) {
	h, err := m.lease.Holder(ctx)
	if err != nil {
		m.opts.Log.Warn("ha: cannot read the lease", "node", m.opts.Node, "err", err)
	} else {
		m.holder.Store(&h)
	}
	epoch, leading := m.opts.Token()
	role := view.RoleLeader
	if !leading {
		role, epoch = view.RoleStandby, 0
		if p := m.holder.Load(); p != nil {
			epoch = p.Epoch
		}
	}
	if err := m.roster.Beat(ctx, Beat{Node: m.opts.Node, Role: role, Address: m.opts.Address, Epoch: epoch, Fingerprint: m.opts.Fingerprint}); err != nil {
		m.opts.Log.Warn("ha: heartbeat failed", "node", m.opts.Node, "err", err)
	}
	nodes, err := m.roster.Nodes(ctx)
	if err != nil {
		m.opts.Log.Warn("ha: cannot read the nodes", "node", m.opts.Node, "err", err)
		return
	}
	pins := make(map[string]string, len(nodes))
	for _, n := range nodes {
		pins[n.Name] = n.TLSFingerprint
	}
	m.pins.Store(&pins)
}

// Run steps every Retry until ctx ends.
func (m *Members) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.Retry)
	defer t.Stop()
	for {
		m.Step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Leading reports whether this node leads now (its elector's word).
func (m *Members) Leading() bool {
	_, ok := m.opts.Token()
	return ok
}

// Leader returns the node a standby forwards to and its address, as the
// lease last read names them; when that reading named none, the lease is
// read again: an election decided since (within one Retry) must not
// refuse a request that GET /v1/cluster, which reads the lease afresh,
// already names a leader for. ok is false when no other node's lease is
// valid (none is known: the request cannot be served now).
func (m *Members) Leader(ctx context.Context) (name, address string, ok bool) {
	if name, address, ok = m.lastLeader(); ok {
		return name, address, true
	}
	h, err := m.lease.Holder(ctx)
	if err != nil {
		return "", "", false
	}
	return m.leaderOf(&h)
}

// lastLeader is Leader as the lease was last read, without reading it.
func (m *Members) lastLeader() (name, address string, ok bool) {
	return m.leaderOf(m.holder.Load())
}

// leaderOf names the node a reading of the lease says leads, if it is
// valid and another node's.
func (m *Members) leaderOf(h *Holder) (name, address string, ok bool) {
	if h == nil || !h.Valid || h.Node == m.opts.Node || h.Address == "" {
		return "", "", false
	}
	return h.Node, h.Address, true
}

// LeaderFingerprint is the certificate fingerprint the leader (as Leader
// names it) last beat with; "" when unknown.
func (m *Members) LeaderFingerprint() string {
	name, _, ok := m.lastLeader()
	p := m.pins.Load()
	if !ok || p == nil {
		return ""
	}
	return (*p)[name]
}

// Role is whether this node leads now and with which epoch, and the
// lease as last read (the zero Holder before the first read): the
// elector's and the membership's word in one call, without a database
// call.
func (m *Members) Role() (leading bool, epoch int64, leader Holder) {
	epoch, leading = m.opts.Token()
	if h := m.holder.Load(); h != nil {
		leader = *h
	}
	return leading, epoch, leader
}

// State reads the lease and the nodes afresh: GET /v1/cluster.
func (m *Members) State(ctx context.Context) (view.Cluster, error) {
	h, err := m.lease.Holder(ctx)
	if err != nil {
		return view.Cluster{}, err
	}
	nodes, err := m.roster.Nodes(ctx)
	if err != nil {
		return view.Cluster{}, err
	}
	c := view.Cluster{Epoch: h.Epoch, Self: m.opts.Node, Nodes: nodes}
	if h.Valid {
		c.Leader = h.Node
	}
	return c, nil
}
