package metrics

import (
	"testing"

	"dispatch-tui/engine/ha"
)

// A node's leadership metrics are its elector's counts as they stand at
// each scrape; a single dispatcher has none.
func TestHAMetrics(t *testing.T) {
	m := NewRecorder()
	_, fams := scrape(t, m)
	if fams["dispatch_tui_leader"] != nil || fams["dispatch_tui_takeovers_total"] != nil {
		t.Fatal("leadership metrics exported without an elector")
	}
	st := ha.Stats{Leading: true, Epoch: 7, Renewals: 12, RenewalFailures: 2, Takeovers: 3}
	m.AttachHA(func() ha.Stats { return st })
	_, fams = scrape(t, m)
	expect(t, fams, 1, "dispatch_tui_leader")
	expect(t, fams, 7, "dispatch_tui_epoch")
	expect(t, fams, 12, "dispatch_tui_lease_renewals_total")
	expect(t, fams, 2, "dispatch_tui_lease_renewal_failures_total")
	expect(t, fams, 3, "dispatch_tui_takeovers_total")
	st = ha.Stats{Renewals: 12, RenewalFailures: 3, Takeovers: 3}
	_, fams = scrape(t, m)
	expect(t, fams, 0, "dispatch_tui_leader")
	expect(t, fams, 0, "dispatch_tui_epoch")
	expect(t, fams, 3, "dispatch_tui_lease_renewal_failures_total")
}
