package tui

import (
	"strings"
	"testing"
)

// TestDetailsShowLabelsAndSupervisor: the container details list the
// scheduling labels and say when it is a supervisor (docs/design.md §5).
func TestDetailsShowLabelsAndSupervisor(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(7, 35)
	s.Containers[2].Scheduling.Constraints = map[string]string{"zone": "eu", "gpu": "a100"}
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

// TestFilterByLabel: the filter matches a container's labels (and
// "supervisor"), which no column shows.
func TestFilterByLabel(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(7, 35)
	for _, i := range []int{3, 7, 11} {
		s.Containers[i].Scheduling.Constraints = map[string]string{"gpu": "A100"}
	}
	s.Containers[7].Scheduling.Supervisor = true
	load(t, m, fb, s)
	runCmd(m, press(m, "2"))
	for _, tc := range []struct {
		filter string
		want   int
	}{
		{"gpu=a100", 3},
		{"supervisor", 1},
		{"!gpu=a100", 32},
	} {
		press(m, "/")
		typeText(m, tc.filter)
		press(m, "enter")
		if got := m.table().Shown(); got != tc.want {
			t.Errorf("filter %q shows %d rows, want %d", tc.filter, got, tc.want)
		}
		press(m, "esc")
	}
}
