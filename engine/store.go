// The store's health as the API, the metrics, ls and the console show it;
// the queue keeps it (queue/storehealth.go, docs/design.md §10.1).

package engine

import (
	"time"

	"dispatch-tui/engine/queue"
)

// StoreHealth returns whether the store can write (for metrics).
func (e *Engine) StoreHealth() queue.StoreHealth { return e.queue.StoreHealth() }

// setStore fills s's store fields from h: the error is its system cause
// alone ("no space left on device"), not the store's path and layers.
func (s *Summary) setStore(h queue.StoreHealth) {
	s.StoreUnavailableSince = h.UnavailableSince
	if h.Err != nil {
		s.StoreError = rootCause(h.Err)
	}
}

// StoreStatus is the line ls and the console show while the store cannot
// write, "" while it can. The time is local, as the console's clock is.
func (s Summary) StoreStatus() string {
	if s.StoreUnavailableSince.IsZero() {
		return ""
	}
	check := "check the state_dir's disk"
	if s.Store == "postgres" {
		check = "check the PostgreSQL server"
	}
	return "store unavailable since " + s.StoreUnavailableSince.Local().Format(time.TimeOnly) + ": " + s.StoreError +
		" (changes are kept in memory until it can write; " + check + ")"
}
