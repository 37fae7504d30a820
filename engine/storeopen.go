// Opening the queue's store: the embedded bbolt file in the state dir, or
// PostgreSQL when [store] has a URL (docs/design.md §3, Persistence).

package engine

import (
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/store/pgstore"
)

// openStore opens the store the engine's queue is kept in.
func openStore(opts Options) (store.Store, error) {
	if url := opts.Config.Store.URL; url != "" {
		return pgstore.Open(pgstore.Options{URL: url, EventRetention: opts.Config.Dispatcher.EventRetention})
	}
	return boltstore.Open(boltstore.Options{
		Path:           opts.StorePath,
		EventRetention: opts.Config.Dispatcher.EventRetention,
	})
}
