package queue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/fulldisk"
)

// storeEvents returns the store-health events among evs, a line each.
func storeEvents(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == StoreEventKind {
			out = append(out, e.Action+": "+e.Reason)
		}
	}
	return out
}

// On a full disk (a real bbolt file on a full tmpfs) a flush that cannot be
// written marks the store unavailable, with the time and the error, and one
// event however many writes fail; once there is room the next flush writes
// what was kept in memory and one more event says the store writes again.
func TestStoreHealthOnAFullDisk(t *testing.T) {
	dir := fulldisk.Tmpfs(t, "4m")
	e := newEnv(t, func(o *envOptions) {
		o.Store.Path = filepath.Join(dir, "state", "queue.db")
		o.EventsInMemory = 10 // reads of the whole log go to the file
	})
	// Records large enough that changing them all needs pages the full
	// disk does not have (freed pages the store may reuse are far fewer).
	var ids []string
	for range 300 {
		ids = append(ids, e.submit(spec("sh", "-c", strings.Repeat("x", 1000))).ID)
	}
	if h := e.q.StoreHealth(); !h.UnavailableSince.IsZero() || h.Err != nil || h.WriteFailures != 0 {
		t.Fatalf("before the disk is full: %+v", h)
	}
	filler := fulldisk.Fill(t, dir, 0)

	lockAll := func(tx *Tx) {
		for _, id := range ids {
			toggleLock(t, tx, tx.Get(id))
		}
	}
	failedAt := e.clk.Now()
	if err := e.q.Pass(lockAll); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("a pass on a full disk: %v, want no space left on device", err)
	}
	h := e.q.StoreHealth()
	if !h.UnavailableSince.Equal(failedAt) || h.Err == nil || !strings.Contains(h.Err.Error(), "no space left on device") || h.WriteFailures != 1 {
		t.Fatalf("after a failed write: %+v, want unavailable since %s with the error, 1 failure", h, failedAt)
	}
	// Further failures count, but neither move the time nor add events.
	e.clk.Advance(5 * time.Second)
	if err := e.q.Flush(); err == nil {
		t.Fatal("a retry on a still full disk succeeded")
	}
	if h := e.q.StoreHealth(); !h.UnavailableSince.Equal(failedAt) || h.WriteFailures != 2 {
		t.Fatalf("after a second failure: %+v", h)
	}
	// The whole log reads (what the store has, then what waits in
	// memory), although the flush before the read fails too.
	evs, err := e.q.Events(0, 1000)
	if err != nil {
		t.Fatalf("events while the store cannot write: %v", err)
	}
	if len(evs) != 601 {
		t.Fatalf("%d events while the store cannot write, want 300 submits, 300 locks and the store's", len(evs))
	}
	if got := storeEvents(evs); len(got) != 1 || !strings.HasPrefix(got[0], "unavailable: cannot write: ") || !strings.Contains(got[0], "no space left on device") {
		t.Fatalf("store events while unavailable: %q, want one unavailable", got)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(10 * time.Second)
	if err := e.q.Flush(); err != nil {
		t.Fatalf("a flush with room again: %v", err)
	}
	if h := e.q.StoreHealth(); !h.UnavailableSince.IsZero() || h.Err != nil || h.WriteFailures != 3 {
		t.Fatalf("with room again: %+v, want available, 3 failures counted (a pass, a flush, the one before reading events)", h)
	}
	evs, err = e.q.Events(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := storeEvents(evs)
	if len(got) != 2 || !strings.HasPrefix(got[1], "available: writes again after 15s unavailable") {
		t.Fatalf("store events after: %q, want unavailable then available after 15s", got)
	}
	// Nothing was lost: the changes kept in memory, and both events, are
	// in the store.
	e.reopen()
	for _, id := range ids {
		if c := e.get(id); c.State != Locked {
			t.Fatalf("%s reopened %s, want Locked", id, c.State)
		}
	}
	evs, err = e.q.Events(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if stored := storeEvents(evs); len(stored) != 2 || stored[0] != got[0] || stored[1] != got[1] {
		t.Fatalf("stored store events %q, want %q", stored, got)
	}
}

// A submit the full disk refuses marks the store unavailable too; the next
// flush with room (it has the event to write) ends it.
func TestStoreHealthAfterARefusedSubmit(t *testing.T) {
	dir := fulldisk.Tmpfs(t, "4m")
	e := newEnv(t, func(o *envOptions) { o.Store.Path = filepath.Join(dir, "state", "queue.db") })
	filler := fulldisk.Fill(t, dir, 0)
	specs := make([]Spec, 300)
	for i := range specs {
		specs[i] = spec("sh", "-c", strings.Repeat("x", 1000))
	}
	if _, err := e.q.SubmitBatch(specs, "operator:test"); err == nil {
		t.Fatal("a submit of 300 KiB on a full disk succeeded")
	}
	if h := e.q.StoreHealth(); !h.UnavailableSince.Equal(e.clk.Now()) || h.WriteFailures != 1 {
		t.Fatalf("after a refused submit: %+v", h)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := e.q.Events(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if h, got := e.q.StoreHealth(), storeEvents(evs); !h.UnavailableSince.IsZero() || len(got) != 2 {
		t.Fatalf("with room again: %+v, events %q", h, got)
	}
}
