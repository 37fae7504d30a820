package tui

import (
	"strings"
	"testing"
	"time"
)

// While the daemon's store cannot write, the header flags it and the line
// under it says since when and why (escaped), unless a verb's message is
// showing; once it writes again both go.
func TestHeaderShowsAStoreThatCannotWrite(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 160, 40)
	s := fakeSnapshot(3, 5)
	since := t0.Add(-90 * time.Second)
	s.Summary.StoreUnavailableSince, s.Summary.StoreError = since, "no space left on device\x1b[2J"
	load(t, m, fb, s)
	got := lines(m)
	want := "store unavailable since " + since.Local().Format(time.TimeOnly) + `: no space left on device\x1b[2J (`
	if !strings.Contains(got[0], "STORE DOWN") || !strings.HasPrefix(got[headerLines-2], want) {
		t.Fatalf("header while the store cannot write:\n%s\nwant STORE DOWN on the first line and a line starting %q", strings.Join(got[:headerLines], "\n"), want)
	}
	if strings.Contains(m.View().Content, "\x1b[2J") {
		t.Fatal("the error's escape sequence reached the terminal")
	}

	s = fakeSnapshot(3, 5)
	load(t, m, fb, s)
	got = lines(m)
	if head := strings.Join(got[:headerLines], "\n"); strings.Contains(head, "STORE DOWN") || strings.Contains(head, "store unavailable") {
		t.Fatalf("header once the store writes again:\n%s", head)
	}
}
