package tui

import (
	"strings"
	"testing"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

// rowsOnly is s as an attached console receives it: rows, and each full
// record only when asked for by id (fb.full).
func rowsOnly(fb *fakeBackend, s *backend.Snapshot) *backend.Snapshot {
	fb.full = map[string]view.Container{}
	for _, c := range s.Containers {
		fb.full[c.ID] = c
	}
	s.Rows = backend.NewRows(s.Containers, nil)
	s.Containers = nil
	return s
}

// An attached console's snapshot has no full records: the details and the
// YAML of a container read its record by id, and say so meanwhile.
func TestDetailsReadTheFullRecordOnDemand(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 160, 40)
	s := fakeSnapshot(7, 35)
	s.Containers[2].Command = []string{"train", "--epochs=9"}
	s.Containers[2].Env = map[string]string{"SEED": "42"}
	load(t, m, fb, rowsOnly(fb, s))
	press(m, "2")
	m.table().SetCursor("c-000002")
	cmd := press(m, "enter")
	if got, w := plain(m), "reading its record"; !strings.Contains(got, w) {
		t.Errorf("details before the record came lack %q:\n%s", w, got)
	}
	runCmd(m, cmd)
	got := plain(m)
	for _, w := range []string{"train --epochs=9", "SEED=42", "Container c-000002"} {
		if !strings.Contains(got, w) {
			t.Errorf("details lack %q:\n%s", w, got)
		}
	}
	runCmd(m, press(m, "y"))
	if got, w := plain(m), "--epochs=9"; !strings.Contains(got, w) {
		t.Errorf("the YAML lacks %q:\n%s", w, got)
	}

	// Dropped on the daemon since: the details say it is gone.
	delete(fb.full, "c-000003")
	press(m, "esc", "esc")
	m.table().SetCursor("c-000003")
	runCmd(m, press(m, "enter"))
	if got, w := plain(m), "is gone"; !strings.Contains(got, w) {
		t.Errorf("details of a container the daemon dropped lack %q:\n%s", w, got)
	}
}
