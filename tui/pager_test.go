package tui

import (
	"strings"
	"testing"
)

// longLogs are 100 lines of 150 characters each, with a marker near the
// end of line 7 only.
func longLogs() string {
	var b strings.Builder
	for i := range 100 {
		tail := "tail"
		if i == 7 {
			tail = "ERROR=7"
		}
		b.WriteString("line " + itoa3(i) + " " + strings.Repeat("x", 140) + " " + tail + "\n")
	}
	return b.String()
}

// openLogs opens the logs of c-000003 (Running) at w×h.
func openLogs(t *testing.T, w, h int) (*Model, *fakeBackend) {
	t.Helper()
	m, fb := newTest(t, Options{})
	fb.logs = longLogs()
	size(m, w, h)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	m.table().SetCursor("c-000003")
	runCmd(m, press(m, "l"))
	if m.mode != modeLogs {
		t.Fatalf("l did not open the logs: mode %v", m.mode)
	}
	return m, fb
}

// A search that finds a match far right, then wrap off: each line shows
// from column 0 with a cut marker; → scrolls right, ← and home back; the
// details of another container and the logs of a short-line one open at
// column 0.
func TestUnwrappedLogsStartAtColumnZero(t *testing.T) {
	m, fb := openLogs(t, 80, 24)
	press(m, "/")
	typeText(m, "ERROR=7")
	runCmd(m, press(m, "enter"))
	press(m, "w")
	l := lineWith(m, "line 007")
	if !strings.HasPrefix(l, "line 007 xxx") || !strings.HasSuffix(strings.TrimRight(l, " "), "…") {
		t.Fatalf("wrap off: line 7 reads %q, want it from column 0 with a cut marker\n%s", l, plain(m))
	}
	press(m, "right")
	if l := lineWith(m, "xxxxxxxx"); strings.Contains(l, "line 0") {
		t.Errorf("→ did not scroll right: %q", l)
	}
	press(m, "left", "left", "left", "left", "left", "left", "left", "left", "left", "left", "left", "left")
	if lineWith(m, "line 007") == "" {
		t.Errorf("← did not scroll back to column 0:\n%s", plain(m))
	}
	press(m, "right", "right", "home")
	if lineWith(m, "line 000") == "" {
		t.Errorf("home did not go back to the top and column 0:\n%s", plain(m))
	}
	press(m, "right", "right", "esc", "esc", "1")
	m.table().SetCursor("i-0000")
	press(m, "enter")
	if l := lineWith(m, "Instance "); !strings.HasPrefix(l, "Instance i-0000") {
		t.Errorf("details after unwrapped logs: %q\n%s", l, plain(m))
	}
	fb.logs = "short one\nshort two\n"
	press(m, "esc", "2")
	m.table().SetCursor("c-000004")
	runCmd(m, press(m, "l"))
	if !strings.Contains(plain(m), "short one") {
		t.Errorf("logs of a short-line container are blank after a scrolled one:\n%s", plain(m))
	}
}

// In logs and details, no key of a pager user's reflexes, nor a verb the
// footer does not list, changes anything: they say "not available here".
func TestPagerKeysChangeNothing(t *testing.T) {
	for _, screen := range []string{"l", "enter"} {
		m, fb := openLogs(t, 120, 40)
		if screen == "enter" {
			press(m, "esc")
			press(m, "enter")
			if m.mode != modeDetails {
				t.Fatalf("enter did not open the details: mode %v", m.mode)
			}
		}
		for _, k := range []string{"h", "+", "-", "=", "K", "p", "r", "D", "e", "space", "f", "x", "s"} {
			runCmd(m, press(m, k))
			if m.dlg != nil {
				t.Errorf("screen %s: %s opened a dialog %q", screen, k, m.dlg.Title)
				m.dlg, m.dlgFor = nil, nil
			}
			if !strings.Contains(m.flash, "not available here") {
				t.Errorf("screen %s: %s: flash %q, want \"not available here\"", screen, k, m.flash)
			}
		}
		if len(fb.calls) != 0 {
			t.Errorf("screen %s: keys called the backend: %v", screen, fb.calls)
		}
	}
}

// esc from logs opened from a container's details goes back to those
// details, then to the table.
func TestEscFromLogsBackToDetails(t *testing.T) {
	m, _ := openLogs(t, 120, 40)
	press(m, "esc", "enter")
	runCmd(m, press(m, "l"))
	press(m, "esc")
	if m.mode != modeDetails || !strings.Contains(plain(m), "Container c-000003") {
		t.Fatalf("esc from logs opened from details: mode %v\n%s", m.mode, plain(m))
	}
	press(m, "esc")
	if m.mode != modeNormal {
		t.Errorf("esc from details: mode %v, want the table", m.mode)
	}
}

// Log search: matches highlighted, "match k of N" shown while in the
// logs, "/" opens empty, and the search's status does not follow the
// user back to the table.
func TestLogSearchCountsAndHighlights(t *testing.T) {
	m, _ := openLogs(t, 120, 40)
	press(m, "/")
	typeText(m, "line 01[0-5] x")
	runCmd(m, press(m, "enter"))
	if got := plain(m); !strings.Contains(got, "match 1 of 6") {
		t.Errorf("no \"match 1 of 6\" after the search:\n%s", got)
	}
	if raw := m.View().Content; !strings.Contains(raw, m.th.Selected.Render("line 010 x")) {
		t.Errorf("the current match is not highlighted")
	}
	press(m, "n")
	if got := plain(m); !strings.Contains(got, "match 2 of 6") {
		t.Errorf("n: no \"match 2 of 6\":\n%s", got)
	}
	press(m, "/")
	if m.in.Value() != "" {
		t.Errorf("/ opens with %q, want empty", m.in.Value())
	}
	typeText(m, "ERROR=7")
	runCmd(m, press(m, "enter"))
	if got := plain(m); !strings.Contains(got, "match 1 of 1") || strings.Contains(got, "1 matches") {
		t.Errorf("one match:\n%s", got)
	}
	press(m, "esc", "1")
	if got := plain(m); strings.Contains(got, "match") {
		t.Errorf("the search's status stayed on the instances list:\n%s", got)
	}
}

// Keys bound to nothing say so.
func TestUnboundKeysSaySo(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	for _, k := range []string{"x", "z", "!"} {
		press(m, "esc", "1", k)
		if !strings.Contains(m.flash, k+": not available here") {
			t.Errorf("%s: flash %q", k, m.flash)
		}
	}
}

// A binding on a key a view's sort takes is refused at start-up, naming
// the column.
func TestBindingOnASortKeyRefused(t *testing.T) {
	_, err := New(Options{Backend: &fakeBackend{}, KeyOverrides: map[string]string{"hold": "H"}})
	if err == nil || !strings.Contains(err.Error(), "HOST") || !strings.Contains(err.Error(), `"hold"`) {
		t.Errorf("hold = \"H\": err = %v, want it refused naming HOST and hold", err)
	}
}
