package tui

import (
	"strings"
	"testing"
)

// The container details say when its stored output was cut to
// [containers] max_output, and by how much.
func TestDetailsShowTruncatedOutput(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 160, 40)
	s := fakeSnapshot(7, 35)
	s.Containers[2].LogsTruncated = 3 << 20
	load(t, m, fb, s)
	press(m, "2")
	m.table().SetCursor("c-000002")
	runCmd(m, press(m, "enter"))
	if got, w := plain(m), "its first 3145728 bytes were dropped"; !strings.Contains(got, w) {
		t.Errorf("details lack %q:\n%s", w, got)
	}
}
