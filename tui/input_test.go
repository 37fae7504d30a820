package tui

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// lines returns the ANSI-stripped screen's lines.
func lines(m *Model) []string { return strings.Split(plain(m), "\n") }

// Once the typed id matches, the focus moves to the kill button, so enter
// confirms; before that enter on Cancel cancels.
func TestKillConfirmTypedThenEnter(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	id := m.table().Cursor()
	press(m, "K")
	typeText(m, id[:3])
	if m.dlg.Focus != 0 {
		t.Fatal("focus left Cancel before the id was typed in full")
	}
	typeText(m, id[3:])
	if m.dlg.Focus != 1 || !strings.Contains(plain(m), "> Kill <") {
		t.Fatalf("typed id: focus %d, want the Kill button", m.dlg.Focus)
	}
	press(m, "backspace")
	if m.dlg.Focus != 0 {
		t.Fatal("focus stayed on Kill after the id stopped matching")
	}
	typeText(m, id[len(id)-1:])
	cmd := press(m, "enter")
	runCmd(m, cmd)
	if len(fb.calls) != 1 || fb.calls[0] != (call{"container", id, "kill"}) {
		t.Fatalf("calls = %v", fb.calls)
	}
}

// Text is never cut where it matters: the kill dialog's buttons and the
// footer at 60×16, the "too small" message at 40×10, `q quit` at 80×24.
func TestTextFitsSmallTerminals(t *testing.T) {
	m, fb := newTest(t, Options{})
	load(t, m, fb, fakeSnapshot(7, 35))
	for _, v := range []string{"1", "2"} {
		size(m, 60, 16)
		press(m, v, "K")
		ls := lines(m)
		if len(ls) != 16 {
			t.Fatalf("view %s: %d lines at 60×16", v, len(ls))
		}
		scr := strings.Join(ls, "\n")
		if !strings.Contains(scr, "> Cancel <") || !strings.Contains(scr, "[ Kill ]") {
			t.Errorf("view %s: kill dialog buttons not shown at 60×16:\n%s", v, scr)
		}
		if !strings.Contains(ls[15], "q quit") {
			t.Errorf("view %s: footer lost at 60×16: %q", v, ls[15])
		}
		press(m, "esc")
		size(m, 80, 24)
		if ls := lines(m); !strings.Contains(ls[23], "q quit") {
			t.Errorf("view %s: footer at 80×24 lacks q quit: %q", v, ls[23])
		}
	}
	size(m, 40, 10)
	ls := lines(m)
	for _, l := range ls {
		if w := ansi.StringWidth(l); w > 40 {
			t.Errorf("too-small line is %d wide: %q", w, l)
		}
	}
	if got := strings.Join(strings.Fields(strings.Join(ls, " ")), " "); !strings.Contains(got, "terminal too small: 40×10; need at least 60×16") {
		t.Errorf("too-small message cut: %q", got)
	}
}

// A bulk dialog lists every id in full, wrapped.
func TestDialogWrapsIDs(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	for range 12 {
		press(m, "space")
	}
	press(m, "h")
	got := plain(m)
	for _, id := range m.table().Marked() {
		if !strings.Contains(got, id) {
			t.Errorf("dialog lacks %s:\n%s", id, got)
		}
	}
	if strings.Contains(got, "more") {
		t.Errorf("dialog summarises ids instead of listing them")
	}
}

func TestRefusedKeysSayNotAvailable(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	tests := []struct {
		view, key string
	}{
		{"2", "D"}, // drain: instances only
		{"1", "+"}, // priority: containers only
		{"3", "h"}, // no verbs on types
		{"4", "K"},
		{"3", "l"},     // logs: containers only
		{"1", "Z"},     // no column sorts by Z
		{"?", "space"}, // marking in the help
	}
	for _, tc := range tests {
		press(m, "esc", tc.view, tc.key)
		if !strings.HasSuffix(m.flash, ": not available here") && !strings.Contains(m.flash, "not available here") || !m.flashErr {
			t.Errorf("view %s key %s: flash %q", tc.view, tc.key, m.flash)
		}
	}
	if len(fb.calls) != 0 {
		t.Errorf("refused keys called the backend: %v", fb.calls)
	}
}

func TestInvalidRegexpFilterSaysSo(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2", "/")
	typeText(m, "job-[")
	if !strings.Contains(plain(m), "not a valid regexp") {
		t.Errorf("prompt does not say the regexp is invalid: %q", lines(m)[39])
	}
	press(m, "enter")
	if !m.flashErr || !strings.Contains(m.flash, "not a valid regular expression") {
		t.Errorf("flash %q", m.flash)
	}
	press(m, "/", "backspace")
	if strings.Contains(lines(m)[39], "not a valid") {
		t.Error("still says invalid after fixing it")
	}
}

// Marks hidden by a filter are left alone, and the dialog says so.
func TestVerbsActOnShownMarks(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2", "space", "space", "space") // c-000000..2
	press(m, "/")
	typeText(m, "c-000001")
	press(m, "enter")
	press(m, "K")
	if m.dlg == nil || !strings.Contains(plain(m), "2 more marked containers are hidden by the filter") {
		t.Fatalf("dialog does not say marks are hidden:\n%s", plain(m))
	}
	typeText(m, "c-000001")
	runCmd(m, press(m, "enter"))
	if want := []call{{"container", "c-000001", "kill"}}; !slices.Equal(fb.calls, want) {
		t.Errorf("calls = %v, want %v", fb.calls, want)
	}
	// Every mark hidden: refused, nothing sent.
	press(m, "esc", "g", "space")
	press(m, "/")
	typeText(m, "c-00003")
	press(m, "enter", "h")
	if m.dlg != nil || !strings.Contains(m.flash, "hidden by the filter") {
		t.Errorf("verb on hidden marks: dlg %v flash %q", m.dlg != nil, m.flash)
	}
}

// `-` at priority 0 changes nothing and says so; dropping to 0 asks.
func TestPriorityZero(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(3, 5)
	s.Containers[0].Priority = 0 // c-000000
	load(t, m, fb, s)
	press(m, "2")
	m.table().SetCursor("c-000000")
	runCmd(m, press(m, "-"))
	if m.dlg != nil || len(fb.calls) != 0 || !m.flashErr || !strings.Contains(m.flash, "already 0") {
		t.Fatalf("- at 0: dlg %v calls %v flash %q", m.dlg != nil, fb.calls, m.flash)
	}
	s.Containers[1].Priority = 1
	load(t, m, fb, s)
	m.table().SetCursor("c-000001")
	press(m, "-")
	if m.dlg == nil || !strings.Contains(plain(m), "never scheduled") || m.dlg.Focus != 0 {
		t.Fatalf("dropping to 0 did not ask:\n%s", plain(m))
	}
	press(m, "tab")
	runCmd(m, press(m, "enter"))
	if want := []call{{"priority", "c-000001", "0"}}; !slices.Equal(fb.calls, want) {
		t.Errorf("calls = %v, want %v", fb.calls, want)
	}
}

// The help is a viewport: at 80×24 it scrolls to its last line.
func TestHelpScrolls(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(3, 3))
	press(m, "?")
	first := plain(m)
	if !strings.Contains(first, "Keys (rebind") || strings.Contains(first, "Sorting") {
		t.Fatalf("help top:\n%s", first)
	}
	press(m, "pgdown")
	press(m, "G")
	end := plain(m)
	if !strings.Contains(end, "Logs: end/G follows the end") || strings.Contains(end, "Keys (rebind") {
		t.Errorf("help end:\n%s", end)
	}
	press(m, "?")
	if m.mode != modeNormal {
		t.Error("? did not close the help")
	}
}

// `:` completes command names (tab), keeps a history (↑) and takes an
// argument.
func TestCommandCompletionHistoryArgument(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, ":")
	typeText(m, "cont")
	press(m, "tab", "enter")
	if m.view != vContainers {
		t.Fatalf(":cont<tab> went to view %d", m.view)
	}
	press(m, ":")
	typeText(m, "containers Running")
	press(m, "enter")
	if m.table().Filter() != "Running" || m.table().Shown() != 10 {
		t.Errorf(":containers Running: filter %q, %d shown", m.table().Filter(), m.table().Shown())
	}
	press(m, "1", ":", "up", "enter")
	if m.view != vContainers || m.table().Filter() != "Running" {
		t.Errorf("history: view %d filter %q", m.view, m.table().Filter())
	}
	press(m, ":", "up", "up", "enter")
	if m.view != vContainers {
		t.Errorf("history second entry: view %d", m.view)
	}
}

func TestLogsSearchWrapFollow(t *testing.T) {
	m, fb := newTest(t, Options{})
	var b strings.Builder
	for i := range 100 {
		b.WriteString("line " + itoa3(i) + " " + strings.Repeat("x", 150) + "\n")
	}
	fb.logs = b.String()
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	runCmd(m, press(m, "l"))
	if !strings.Contains(plain(m), "line 099") || !m.logFollow {
		t.Fatalf("logs do not follow the end:\n%s", plain(m))
	}
	press(m, "up")
	if m.logFollow {
		t.Error("scrolling up kept following")
	}
	press(m, "/")
	typeText(m, "line 01[0-9]")
	runCmd(m, press(m, "enter"))
	if got := plain(m); !strings.Contains(got, "line 010") || strings.Contains(got, "line 099") {
		t.Errorf("search did not scroll to the match:\n%s", got)
	}
	press(m, "n")
	if !strings.Contains(plain(m), "line 011") {
		t.Error("n did not go to the next match")
	}
	wrapped := len(strings.Split(plain(m), "line 0")) - 1
	press(m, "w")
	unwrapped := len(strings.Split(plain(m), "line 0")) - 1
	if unwrapped <= wrapped {
		t.Errorf("w: %d lines shown unwrapped, %d wrapped", unwrapped, wrapped)
	}
	press(m, "G")
	if !m.logFollow {
		t.Error("G did not resume following")
	}
}

func itoa3(i int) string { s := "00" + strconv.Itoa(i); return s[len(s)-3:] }

var errReconnect = errors.New("connection refused")

// A verb in flight shows a spinner in the footer; so does a backend that
// is reconnecting (snapshots failing).
func TestSpinner(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	m.table().SetCursor("c-000001")
	cmd := press(m, "h")
	if cmd == nil || !strings.Contains(lines(m)[39], "hold c-000001…") {
		t.Fatalf("no spinner for the verb in flight: %q", lines(m)[39])
	}
	before := lines(m)[39]
	m.Update(spinMsg{seq: m.spinSeq})
	if lines(m)[39] == before {
		t.Error("spinner did not advance")
	}
	runCmd(m, cmd)
	if strings.Contains(lines(m)[39], "…") {
		t.Errorf("spinner still shown: %q", lines(m)[39])
	}
	m.Update(snapshotMsg{gen: m.fetchGen, err: errReconnect})
	if !strings.Contains(lines(m)[39], "reconnecting") {
		t.Errorf("no reconnecting spinner: %q", lines(m)[39])
	}
}

// A prompt typed over the logs keeps them on screen (and following).
func TestPromptOverScreen(t *testing.T) {
	m, fb := newTest(t, Options{})
	fb.logs = "first line\n"
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	runCmd(m, press(m, "l"))
	press(m, ":")
	if got := plain(m); !strings.Contains(got, "first line") {
		t.Fatalf("`:` over the logs hid them:\n%s", got)
	}
	fb.logs = "first line\nsecond line\n"
	runCmd(m, m.fetchLogs())
	if got := plain(m); !strings.Contains(got, "second line") {
		t.Errorf("logs stopped refreshing under the prompt:\n%s", got)
	}
	press(m, "esc")
	if m.mode != modeLogs {
		t.Errorf("esc from the prompt went to mode %d, want the logs", m.mode)
	}
}

// NO_COLOR: the prompts, the footer's help and the dialog's input use no
// colour (bubbles' default styles do).
func TestNoColorPromptsAndDialog(t *testing.T) {
	m, fb := newTest(t, Options{NoColor: true})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	noColour := func(what string) {
		t.Helper()
		if raw := m.View().Content; strings.Contains(raw, "38;") || strings.Contains(raw, "48;") {
			t.Errorf("%s: colour sequences under NO_COLOR", what)
		}
	}
	noColour("table and footer")
	press(m, ":")
	typeText(m, "cont")
	noColour("command prompt with a suggestion")
	press(m, "esc", "2", "K")
	typeText(m, "c-0")
	noColour("kill dialog input")
	press(m, "esc", "?")
	noColour("help")
}
