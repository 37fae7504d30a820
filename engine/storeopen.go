// Opening the queue's store: the embedded bbolt file in the state dir, or
// PostgreSQL when [store] has a URL (docs/design.md §3, Persistence).

package engine

import (
	"errors"
	"os"
	"path/filepath"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/store/pgstore"
)

// OpenStore opens cfg's store: PostgreSQL when [store] has a URL, else the
// embedded file at path ("" = <state_dir>/dispatch-tui.db). existed tells
// whether the embedded file was there before (ResolveClusterID's sign of
// an upgrade); a PostgreSQL store is never older than cluster ids.
func OpenStore(cfg *config.Config, path string) (st store.Store, existed bool, err error) {
	if url := cfg.Store.URL; url != "" {
		st, err := pgstore.Open(pgstore.Options{URL: url, EventRetention: cfg.Dispatcher.EventRetention})
		return st, false, err
	}
	if path == "" {
		path = filepath.Join(cfg.Dispatcher.StateDir, StoreFile)
	}
	_, statErr := os.Stat(path)
	bs, err := boltstore.Open(boltstore.Options{Path: path, EventRetention: cfg.Dispatcher.EventRetention})
	if err != nil {
		return nil, false, err
	}
	return bs, statErr == nil, nil
}

// OpenFencedStore opens cfg's PostgreSQL store for a leader: every write
// first checks fence's epoch against the lease (docs/design.md §11,
// Fencing the store), and a session left idle in a transaction for half
// the lease is ended by the server, so that a leader stopped mid-write
// does not hold the lease row's lock past its lease.
func OpenFencedStore(cfg *config.Config, fence func() (int64, bool)) (store.Store, error) {
	return pgstore.Open(pgstore.Options{URL: cfg.Store.URL, EventRetention: cfg.Dispatcher.EventRetention, Fence: fence, IdleInTransaction: cfg.HA.Lease / 2})
}

// KeptClusterID returns the cluster id cfg's store keeps ("" while none,
// or while a running dispatcher holds the embedded file), keeping none:
// for a command that runs beside the dispatcher (cloudtest).
func KeptClusterID(cfg *config.Config) (string, error) {
	if cfg.Store.URL == "" {
		path := filepath.Join(cfg.Dispatcher.StateDir, StoreFile)
		if _, err := os.Stat(path); err != nil {
			return legacyClusterID(cfg.Dispatcher.StateDir)
		}
		bs, err := boltstore.Open(boltstore.Options{Path: path, ReadOnly: true})
		if errors.Is(err, boltstore.ErrInUse) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		defer bs.Close()
		return ClusterIDOf(bs, cfg.Dispatcher.StateDir)
	}
	ps, err := pgstore.Open(pgstore.Options{URL: cfg.Store.URL})
	if err != nil {
		return "", err
	}
	defer ps.Close()
	return ClusterIDOf(ps, cfg.Dispatcher.StateDir)
}

// ClusterIDOf is the id st keeps, else the one in stateDir's older file
// ("" while neither has one): what store copy moves.
func ClusterIDOf(st store.Store, stateDir string) (string, error) {
	id, err := st.ClusterID()
	if err != nil || id != "" {
		return id, err
	}
	return legacyClusterID(stateDir)
}

// recordsStartsFirst reports whether every start waits for the write that
// records it (scheduler.RecordStartsFirst): on PostgreSQL, whose writes
// cross a network to a server that restarts or fills up on its own, at the
// cost of a commit's round trip per pass with starts; the embedded store
// sends a container's first attempt first, sparing each such start its two
// fdatasyncs (docs/design.md §3).
func recordsStartsFirst(st store.Store) bool {
	_, pg := st.(*pgstore.Store)
	return pg
}
