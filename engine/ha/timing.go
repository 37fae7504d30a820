// Package ha elects one leader among dispatchers sharing a PostgreSQL store
// (docs/design.md §11): a lease row with an epoch, renewed on the
// database's clock and given up on the node's own monotonic clock before
// the database could hand it to another node. This file holds the timing
// every other piece derives from.
package ha

import (
	"time"

	"dispatch-tui/engine/clock"
)

// Margin is how long before its lease could run out in the database a
// leader stops acting on its own clock: room for the clocks' rates to
// differ and for the leader to stop what it is doing.
const Margin = time.Second

// MinLease is the shortest lease the config accepts: past the margin it
// leaves a renewal interval (a quarter of the lease) of room at least.
const MinLease = 2 * Margin

// RenewEvery is how often a leader renews a lease of length lease.
func RenewEvery(lease time.Duration) time.Duration { return lease / 4 }

// ActFor is how long after the send time of its last successful renewal a
// leader may act on a lease of length lease.
func ActFor(lease time.Duration) time.Duration { return lease - Margin }

// OpenBackoffMax bounds how long a node that could not open its engine
// after winning the lease waits before it tries for the lease again.
const OpenBackoffMax = time.Minute

// OpenBackoff is that wait after the failures-th such failure in a row:
// twice the retry, doubling with each, bounded by OpenBackoffMax. Another
// node that can open its engine takes the lease meanwhile.
func OpenBackoff(retry time.Duration, failures int) time.Duration {
	return clock.Backoff(2*retry, OpenBackoffMax, failures)
}
