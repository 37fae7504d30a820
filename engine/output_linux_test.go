package engine

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest/fulldisk"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

// tmpfsDir and fillDisk are fulldisk's Tmpfs and Fill, under the names
// this package's tests use.
func tmpfsDir(t *testing.T, size string) string {
	t.Helper()
	return fulldisk.Tmpfs(t, size)
}

func fillDisk(t *testing.T, dir string, slack int64) string {
	t.Helper()
	return fulldisk.Fill(t, dir, slack)
}

// With the state dir's disk full, output that cannot be stored is not lost
// silently: the record says so, an event and a counter count it, and the
// runner keeps it (the logs are still readable from it). Once there is
// room again the output is stored and only then forgotten by the runner.
func TestOutputNotStoredOnAFullDiskIsSaidAndStoredOnceThereIsRoom(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatcher.StateDir = tmpfsDir(t, "4m")
	h := newHarness(t, cfg, fake.Options{})
	// Room for the records, none for outputs of 256 KiB.
	filler := fillDisk(t, cfg.Dispatcher.StateDir, 96<<10)
	var ids []string
	for i := range 3 {
		ids = append(ids, h.submitCmd(fake.CmdOutput(time.Duration(2+i)*time.Second, 0, 256<<10)))
	}
	h.until("outputs not stored", 60, func() bool {
		for _, id := range ids {
			if c := h.container(id); c.State != queue.Complete || c.LogsError == "" {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		c := h.container(id)
		if want := "logs: not stored: no space left on device"; c.LogsError != want {
			t.Errorf("%s: logs_error %q, want %q", id, c.LogsError, want)
		}
		if !strings.Contains(h.eventsOf(id), "logs_error not_stored") {
			t.Errorf("%s: no logs_error event:%s", id, h.eventsOf(id))
		}
		if !listedOn(h, c.InstanceID, id) {
			_, found, _ := h.eng.queue.StoredLogs(id)
			t.Errorf("%s: its runner forgot it although its output is not stored (%q, stored %v)%s", id, c.LogsError, found, h.eventsOf(id))
		}
		// Still readable, from the runner.
		if out, err := h.eng.Logs(context.Background(), id, 0); err != nil || !strings.Contains(string(out.Data), "fake: output") {
			t.Errorf("%s: logs %q, %v; want the runner's copy", id, out.Data, err)
		}
	}
	if got := h.eng.LogsStats().StoreFailures; got != uint64(len(ids)) {
		t.Errorf("store failures counted %d, want %d (one per container)", got, len(ids))
	}
	// Retried later passes do not count again.
	h.step(20)
	if got := h.eng.LogsStats().StoreFailures; got != uint64(len(ids)) {
		t.Errorf("store failures counted %d after retries, want %d", got, len(ids))
	}

	// A restart meanwhile (as an operator might, to get space back) loses
	// nothing either: the runners still have the output.
	if err := h.eng.Close(); err != nil {
		t.Logf("close with a full disk: %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.until("outputs stored and forgotten", 60, func() bool {
		for _, id := range ids {
			if c := h.container(id); c.LogsError != "" || listedOn(h, c.InstanceID, id) {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		out, found, err := h.eng.queue.StoredLogs(id)
		if err != nil || !found || !strings.Contains(string(out), "fake: output") {
			t.Errorf("%s: stored output %d bytes (found %v, %v)", id, len(out), found, err)
		}
	}
}

// listedOn reports whether the runner on inst still lists container id.
func listedOn(h *harness, inst, id string) bool {
	for _, st := range h.cloud.Containers(cloud.InstanceID(inst)) {
		if st.ID == id && st.State == runner.StateExited {
			return true
		}
	}
	return false
}
