package engine_test

import (
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
)

// storeEvents returns the store-health events, a line each.
func storeEvents(t *testing.T, e *engine.Engine) []string {
	t.Helper()
	evs, err := e.Events(0, 10000)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Kind == queue.StoreEventKind {
			out = append(out, ev.Action+": "+ev.Reason)
		}
	}
	return out
}

// A state dir whose disk is full is seen in the summary (the header of
// the console and of ls, GET /v1/summary) with the time and the cause, and
// with one event; once there is room the store writes what it kept, one
// more event says so, and every container ends Complete 0 with nothing
// lost.
func TestFullStoreDiskIsShownUntilItWritesAgain(t *testing.T) {
	cfg := enginetest.Config(t)
	f := enginetest.NewFullStore(t, cfg, engine.Options{})
	sum := f.Engine.Summary()
	since := sum.StoreUnavailableSince
	if sum.StoreError != "no space left on device" || since.IsZero() || since.After(f.Clock.Now()) {
		t.Fatalf("summary store fields: since %v, error %q; want a time and no space left on device", since, sum.StoreError)
	}
	if st := sum.StoreStatus(); !strings.HasPrefix(st, "store unavailable since "+since.Local().Format("15:04:05")+": no space left on device") {
		t.Fatalf("status line %q", st)
	}
	f.Step(10) // more failed writes: no more events
	if got := storeEvents(t, f.Engine); len(got) != 1 || !strings.HasPrefix(got[0], "unavailable: cannot write: ") {
		t.Fatalf("store events while the disk is full: %q, want one unavailable", got)
	}
	// Tried again with a growing back-off, not at every pass.
	if h := f.Engine.StoreHealth(); h.WriteFailures < 2 || h.WriteFailures >= 10 || !h.UnavailableSince.Equal(since) {
		t.Fatalf("after 10 more passes: %+v, want the same since and fewer failures than passes, more than one", h)
	}

	f.Free()
	f.Until("the store writes again", int(queue.MaxStoreRetry/time.Second)+5, func() bool { return f.Engine.Summary().StoreUnavailableSince.IsZero() })
	if sum := f.Engine.Summary(); sum.StoreError != "" || sum.StoreStatus() != "" {
		t.Fatalf("with room again: error %q, status %q", sum.StoreError, sum.StoreStatus())
	}
	if got := storeEvents(t, f.Engine); len(got) != 2 || !strings.HasPrefix(got[1], "available: writes again after ") {
		t.Fatalf("store events: %q, want unavailable then available", got)
	}
	f.Until("every container ends", 60, func() bool {
		for _, id := range f.IDs {
			if c := f.Container(id); c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 || c.LogsError != "" {
				return false
			}
		}
		return true
	})
}
