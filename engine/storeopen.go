// Opening the queue's store: the embedded bbolt file in the state dir
// (docs/design.md §3, Persistence).

package engine

import (
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
)

// openStore opens the store the engine's queue is kept in.
func openStore(opts Options) (store.Store, error) {
	return boltstore.Open(boltstore.Options{
		Path:           opts.StorePath,
		EventRetention: opts.Config.Dispatcher.EventRetention,
	})
}
