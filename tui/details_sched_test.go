package tui

import (
	"strings"
	"testing"
)

// TestDetailsShowLabelsAndSupervisor: the container details list the
// scheduling labels and say when it is a supervisor (issue 15).
func TestDetailsShowLabelsAndSupervisor(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(7, 35)
	s.Containers[2].Scheduling.Labels = map[string]string{"zone": "eu", "gpu": "a100"}
	s.Containers[2].Scheduling.Supervisor = true
	load(t, m, fb, s)
	press(m, "2")
	m.table().SetCursor("c-000002")
	runCmd(m, press(m, "enter"))
	got := plain(m)
	for _, w := range []string{"gpu=a100 zone=eu", "supervisor", "yes (at most supervisor_fraction"} {
		if !strings.Contains(got, w) {
			t.Errorf("details lack %q:\n%s", w, got)
		}
	}
}
