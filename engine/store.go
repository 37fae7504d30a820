// The store's health as the API, the metrics, ls and the console show it;
// the queue keeps it (queue/storehealth.go, docs/design.md §10.1).

package engine

import (
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// StoreHealth returns whether the store can write (for metrics).
func (e *Engine) StoreHealth() queue.StoreHealth { return e.queue.StoreHealth() }

// setStore fills s's store fields from h: the error is its system cause
// alone ("no space left on device"), not the store's path and layers.
func setStore(s *view.Summary, h queue.StoreHealth) {
	s.StoreUnavailableSince = h.UnavailableSince
	if h.Err != nil {
		s.StoreError = rootCause(h.Err)
		s.StoreErrorKind = h.ErrKind
	}
}
