package metrics

import (
	"strings"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
)

// A store that cannot write (its disk full) shows in store_unavailable and
// counts in store_write_failures_total and store_errors_total{kind="full"}; the gauge is back to 0 once it
// writes again, the count stays.
func TestStoreUnavailableMetrics(t *testing.T) {
	m := NewRecorder()
	env := enginetest.New(t, enginetest.Config(t), fake.Options{}, engine.Options{})
	m.Attach(env.Engine)
	_, fams := scrape(t, m)
	expect(t, fams, 0, "dispatch_tui_store_unavailable")
	expect(t, fams, 0, "dispatch_tui_store_write_failures_total")

	f := enginetest.NewFullStore(t, enginetest.Config(t), engine.Options{OnPass: m.ObservePass})
	m.Attach(f.Engine)
	text, fams := scrape(t, m)
	expect(t, fams, 1, "dispatch_tui_store_unavailable")
	if n := value(t, fams, "dispatch_tui_store_write_failures_total"); n < 1 {
		t.Fatalf("store_write_failures_total %v with the store failing", n)
	}
	// By kind: a full disk is "full", and nothing else.
	if n := value(t, fams, "dispatch_tui_store_errors_total", "kind", "full"); n < 1 {
		t.Fatalf(`store_errors_total{kind="full"} %v with the disk full`, n)
	}
	for _, k := range []string{"unavailable", "auth", "other"} {
		expect(t, fams, 0, "dispatch_tui_store_errors_total", "kind", k)
	}
	if sum := f.Engine.Summary(); sum.StoreErrorKind != "full" || !strings.Contains(sum.StoreStatus(), "free space on the state_dir's disk") {
		t.Fatalf("summary: kind %q, status %q; want full, and advice to free space", sum.StoreErrorKind, sum.StoreStatus())
	}
	t.Run("promtool", func(t *testing.T) { promtoolCheck(t, text) })

	f.Free()
	f.Until("the store writes again", 10, func() bool { return f.Engine.StoreHealth().UnavailableSince.IsZero() })
	_, fams = scrape(t, m)
	expect(t, fams, 0, "dispatch_tui_store_unavailable")
	if n := value(t, fams, "dispatch_tui_store_write_failures_total"); n < 1 {
		t.Fatalf("store_write_failures_total %v after, want the failures still counted", n)
	}
	// Every flush, failed or not, is timed.
	if h := histogram(t, fams, "dispatch_tui_store_flush_seconds"); h.GetSampleCount() < 2 || len(h.GetBucket()) == 0 {
		t.Fatalf("store_flush_seconds: %d flushes in %d buckets, want the failed one and the one after", h.GetSampleCount(), len(h.GetBucket()))
	}
}
