// What the elector needs of the lease row (its SQL is engine/store/pgstore's
// lease.go) and what it hands back.

package ha

import (
	"context"
	"time"
)

// Lease is the one leader row of the store. Every time in it is the
// database's.
type Lease interface {
	// Acquire takes the lease for node if it has expired or is node's
	// own, raising the epoch; ok is false when another node holds it.
	Acquire(ctx context.Context, node, address string, lease time.Duration) (t Term, ok bool, err error)
	// Renew extends the lease of epoch by lease from now; ok is false
	// when the epoch is no longer the lease's (another node took it).
	Renew(ctx context.Context, epoch int64, lease time.Duration) (ok bool, err error)
	// Release ends the lease of epoch now, so that a standby takes over
	// at its next try; nothing happens if the epoch is no longer the
	// lease's.
	Release(ctx context.Context, epoch int64) error
	// Holder reads the lease as it stands.
	Holder(ctx context.Context) (Holder, error)
}

// Term is a lease won.
type Term struct {
	Epoch int64
	// ExpiredFor is how long the lease had been expired when it was taken
	// (negative when it was the node's own and still running; 0 for the
	// first lease of the store).
	ExpiredFor time.Duration
	// Left, when the lease was not won, is how long the holder's lease
	// had left (database time; 0 when unknown): a standby tries again
	// as it runs out, not a whole retry later.
	Left time.Duration
}

// Holder is the lease row as it stands.
type Holder struct {
	Epoch     int64
	Node      string // "" before any node has led
	Address   string
	RenewedAt time.Time
	ExpiresAt time.Time
	// Valid: the lease had not expired when it was read (database time).
	Valid bool
}
