package view

import (
	"strings"
	"testing"
	"time"
)

// TestStoreStatusNamesWhatToCheck: the line ls and the console show while
// the store cannot write points at the state dir's disk or at the
// PostgreSQL server, whichever holds the queue.
func TestStoreStatusNamesWhatToCheck(t *testing.T) {
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for store, want := range map[string]string{"bolt": "check the state_dir's disk", "postgres": "check the PostgreSQL server"} {
		s := Summary{StoreUnavailableSince: since, StoreError: "connection refused", Store: store}
		if got := s.StoreStatus(); !strings.Contains(got, want) || !strings.Contains(got, "connection refused") {
			t.Errorf("%s: status %q, want it to say %q", store, got, want)
		}
	}
	if got := (Summary{Store: "postgres"}).StoreStatus(); got != "" {
		t.Errorf("a store that writes: status %q, want none", got)
	}
}
