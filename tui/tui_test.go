package tui

import (
	"dispatch-tui/tui/backend"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dispatch-tui/engine/queue"
	"dispatch-tui/tui/dialog"

	"github.com/charmbracelet/x/ansi"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func plain(m *Model) string { return ansi.Strip(m.View().Content) }

func TestGolden(t *testing.T) {
	cases := []struct {
		name    string
		view    string
		w, h    int
		noColor bool
		ro      bool
	}{
		{"instances_80x24", "1", 80, 24, false, false},
		{"instances_120x40", "1", 120, 40, false, false},
		{"containers_80x24", "2", 80, 24, false, false},
		{"containers_120x40", "2", 120, 40, false, false},
		{"containers_nocolor_80x24", "2", 80, 24, true, false},
		{"instances_nocolor_ro_120x40", "1", 120, 40, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, fb := newTest(t, Options{NoColor: tc.noColor, ReadOnly: tc.ro})
			size(m, tc.w, tc.h)
			// Three snapshots so the sparklines have a history.
			for i, n := range []int{20, 28, 35} {
				s := fakeSnapshot(7, n)
				s.Summary.PricePerHour += float64(i) * 0.1
				load(t, m, fb, s)
			}
			load(t, m, fb, fakeSnapshot(7, 35)) // nothing changed: no highlight
			press(m, tc.view)
			got := plain(m)
			if tc.noColor {
				if raw := m.View().Content; strings.Contains(raw, "38;") || strings.Contains(raw, "48;") {
					t.Errorf("NO_COLOR render contains colour sequences")
				}
			}
			lines := strings.Split(got, "\n")
			if len(lines) != tc.h {
				t.Errorf("view has %d lines, want %d", len(lines), tc.h)
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > tc.w {
					t.Errorf("line %d is %d wide (> %d): %q", i, w, tc.w, l)
				}
			}
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if string(want) != got {
				t.Errorf("view differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

func TestStatesAsTextWithoutColour(t *testing.T) {
	m, fb := newTest(t, Options{NoColor: true})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	got := plain(m)
	for _, s := range []string{"Queued", "Running", "Locked", "Complete", "Cancelled", "held"} {
		if !strings.Contains(got, s) {
			t.Errorf("state %q not shown as text", s)
		}
	}
}

func TestTooSmall(t *testing.T) {
	m, fb := newTest(t, Options{})
	load(t, m, fb, fakeSnapshot(3, 3))
	size(m, 40, 10)
	if got := plain(m); !strings.Contains(got, "terminal too small") {
		t.Errorf("got %q", got)
	}
	if !m.View().AltScreen {
		t.Error("alt screen not set")
	}
}

// When a refresh reorders the rows the cursor stays on its row position
// (k9s' way; it does not leap after its row); rows added above it, and a
// sort or filter the user asks for, leave it on its row.
func TestCursorPositionAndRow(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(10, 0))
	press(m, "j", "j", "j") // i-0003
	cursorLine := func() int {
		for i, l := range lines(m) {
			if strings.HasPrefix(l, ">") {
				return i
			}
		}
		return -1
	}
	withInserted := func() *backend.Snapshot {
		s := fakeSnapshot(10, 0)
		ins := slices.Clone(s.Instances[:3])
		for i := range ins {
			ins[i].ID = ins[i].ID + "a"
		}
		s.Instances = append(ins, s.Instances...)
		return s
	}
	tests := []struct {
		name string
		do   func()
		want string
	}{
		{"rows added above", func() { load(t, m, fb, withInserted()) }, "i-0003"},
		{"sort by state", func() { press(m, "S") }, "i-0003"},
		{"invert sort", func() { press(m, "S") }, "i-0003"},
		{"sort by price", func() { press(m, "P") }, "i-0003"},
		{"filter", func() { press(m, "/"); typeText(m, "i-000"); press(m, "enter") }, "i-0003"},
		{"clear filter", func() { press(m, "esc") }, "i-0003"},
	}
	for _, tc := range tests {
		tc.do()
		if got := m.table().Cursor(); got != tc.want {
			t.Errorf("after %s: cursor on %q, want %s", tc.name, got, tc.want)
		}
	}
	// Its price changes: sorted by price, the row moves; the cursor
	// stays on the screen line it was on.
	at := cursorLine()
	s := withInserted()
	for i := range s.Instances {
		if s.Instances[i].ID == "i-0003" {
			s.Instances[i].Price = 9
		}
	}
	load(t, m, fb, s)
	if got := m.table().Cursor(); got == "i-0003" || cursorLine() != at {
		t.Errorf("reordered by a refresh: cursor on %q at line %d, want another row at line %d", got, cursorLine(), at)
	}
}

func TestFilterAndSort(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	tests := []struct {
		filter string
		shown  int
	}{
		{"", 35},
		{"cancelled", 5},
		{"!cancelled", 30},
		{"c-00001[0-4]", 5}, // regexp
		{"job-3", 6},        // job-3, job-30..34
		{"[", 0},            // does not compile: substring
	}
	for _, tc := range tests {
		press(m, "/")
		press(m, "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace")
		typeText(m, tc.filter)
		press(m, "enter")
		if got := m.table().Shown(); got != tc.shown {
			t.Errorf("filter %q: %d rows shown, want %d", tc.filter, got, tc.shown)
		}
	}
	press(m, "esc")
	if m.table().Filter() != "" || m.table().Shown() != 35 {
		t.Errorf("esc did not clear the filter")
	}
	// Sort by priority, then invert; the header marks the column.
	press(m, "P")
	col, desc := m.table().Sort()
	if col != 3 || desc {
		t.Errorf("sort = %d %v", col, desc)
	}
	if !strings.Contains(plain(m), "PRIO↑") {
		t.Errorf("sorted column not marked")
	}
	first, _ := m.table().CursorRow()
	press(m, "g")
	first, _ = m.table().CursorRow()
	if first.Cells[3] != "1" {
		t.Errorf("ascending: first prio %s", first.Cells[3])
	}
	press(m, "P", "g")
	first, _ = m.table().CursorRow()
	if first.Cells[3] != "5" || !strings.Contains(plain(m), "PRIO↓") {
		t.Errorf("descending: first prio %s", first.Cells[3])
	}
}

func TestCommandMode(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(3, 3))
	for _, tc := range []struct {
		cmd  string
		want viewID
	}{{"containers", vContainers}, {"types", vTypes}, {"events", vEvents}, {"instances", vInstances}} {
		press(m, ":")
		typeText(m, tc.cmd)
		press(m, "enter")
		if m.view != tc.want {
			t.Errorf(":%s -> view %d", tc.cmd, m.view)
		}
	}
	press(m, ":")
	typeText(m, "q")
	if cmd := press(m, "enter"); cmd == nil {
		t.Error(":q did not quit")
	}
	if cmd := press(m, "q"); cmd == nil {
		t.Error("q did not quit")
	}
}

func TestKillDialogRequiresID(t *testing.T) {
	for _, view := range []string{"1", "2"} {
		m, fb := newTest(t, Options{})
		size(m, 80, 24)
		load(t, m, fb, fakeSnapshot(7, 35))
		press(m, view)
		id := m.table().Cursor()
		press(m, "K")
		if m.dlg == nil {
			t.Fatalf("view %s: kill opened no dialog", view)
		}
		if m.dlg.Focus != 0 || m.dlg.Expect != id {
			t.Errorf("dialog focus %d expect %q, want Cancel focused and %q", m.dlg.Focus, m.dlg.Expect, id)
		}
		if !strings.Contains(plain(m), "> Cancel <") {
			t.Errorf("Cancel not shown focused")
		}
		// enter on Cancel cancels.
		press(m, "enter")
		if m.dlg != nil || len(fb.calls) != 0 {
			t.Fatalf("enter on Cancel did something: %v", fb.calls)
		}
		// OK without the id does nothing.
		press(m, "K", "tab", "enter")
		if m.dlg == nil || len(fb.calls) != 0 {
			t.Fatalf("kill ran without the id")
		}
		typeText(m, id)
		cmd := press(m, "enter")
		if m.dlg != nil || cmd == nil {
			t.Fatalf("typed id did not confirm")
		}
		if !m.table().Pending(id) {
			t.Errorf("row not pending after the verb")
		}
		runCmd(m, cmd)
		kind := map[string]string{"1": "instance", "2": "container"}[view]
		if len(fb.calls) != 1 || fb.calls[0] != (call{kind, id, "kill"}) {
			t.Errorf("calls = %v", fb.calls)
		}
		if m.table().Pending(id) {
			t.Errorf("row still pending after the next snapshot")
		}
		if !strings.Contains(m.flash, "ok: kill: "+id) {
			t.Errorf("flash = %q", m.flash)
		}
	}
}

func TestBulkDialogRequiresCount(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2", "space", "space", "space") // marks c-000000..2, cursor moves down
	if got := m.table().Marked(); len(got) != 3 {
		t.Fatalf("marked %v", got)
	}
	press(m, "+")
	if m.dlg == nil || m.dlg.Expect != "3" || m.dlg.Focus != 0 {
		t.Fatalf("bulk dialog = %+v", m.dlg)
	}
	press(m, "esc")
	if m.dlg != nil || len(fb.calls) != 0 {
		t.Fatal("esc did not cancel")
	}
	press(m, "+", "right")
	typeText(m, "2")
	press(m, "enter")
	if m.dlg == nil {
		t.Fatal("wrong count confirmed")
	}
	press(m, "backspace")
	typeText(m, "3")
	cmd := press(m, "enter")
	runCmd(m, cmd)
	want := []call{{"priority", "c-000000", "2"}, {"priority", "c-000001", "3"}, {"priority", "c-000002", "4"}}
	if !slices.Equal(fb.calls, want) {
		t.Errorf("calls = %v, want %v", fb.calls, want)
	}
	if len(m.table().Marked()) != 0 {
		t.Errorf("marks not cleared after the verb")
	}
}

// TestMarkedKillInBulk: a verb on marked containers is one bulk call to
// the backend, and only the rows it failed on stay marked.
func TestMarkedKillInBulk(t *testing.T) {
	m, fb := newTest(t, Options{})
	fb.fail = map[string]error{"c-000001": fmt.Errorf("container c-000001 is Complete: a finished container cannot be killed")}
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2", "space", "space", "space")
	press(m, "K", "right")
	typeText(m, "3")
	runCmd(m, press(m, "enter"))
	want := [][]string{{"c-000000", "c-000001", "c-000002"}}
	if !slices.EqualFunc(fb.bulks, want, slices.Equal) {
		t.Errorf("bulk calls %v, want one with the three marked: %v", fb.bulks, want)
	}
	if got := m.table().Marked(); !slices.Equal(got, []string{"c-000001"}) {
		t.Errorf("marked after the verb: %v, want only the failure c-000001", got)
	}
	if !strings.Contains(m.flash, "2 ok, 1 failed") {
		t.Errorf("flash %q", m.flash)
	}
}

func TestContainerHoldToggles(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(3, 12)
	load(t, m, fb, s)
	press(m, "2")
	m.table().SetCursor("c-000010") // held
	runCmd(m, press(m, "h"))
	m.table().SetCursor("c-000001")
	runCmd(m, press(m, "h"))
	want := []call{{"container", "c-000010", "release"}, {"container", "c-000001", "hold"}}
	if !slices.Equal(fb.calls, want) {
		t.Errorf("calls = %v, want %v", fb.calls, want)
	}
}

func TestVerbErrorFlashes(t *testing.T) {
	m, fb := newTest(t, Options{})
	fb.fail = map[string]error{"i-0000": fmt.Errorf("boom")}
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(3, 3))
	cmd := press(m, "r")
	if !m.table().Pending("i-0000") {
		t.Error("not pending")
	}
	runCmd(m, cmd)
	if m.table().Pending("i-0000") || !m.flashErr || !strings.Contains(m.flash, "boom") {
		t.Errorf("pending=%v flash=%q", m.table().Pending("i-0000"), m.flash)
	}
	if !strings.Contains(plain(m), "boom") {
		t.Error("error not shown")
	}
}

func TestReadOnly(t *testing.T) {
	m, fb := newTest(t, Options{ReadOnly: true})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	verbKeys := map[string][]string{"1": {"h", "D", "r", "K", "ctrl+d", "p"}, "2": {"h", "K", "ctrl+d", "+", "-", "e", "p"}}
	for _, view := range []string{"1", "2"} {
		press(m, view)
		for _, k := range verbKeys[view] {
			cmd := press(m, k)
			runCmd(m, cmd)
			if m.dlg != nil {
				t.Errorf("read-only: %s opened a dialog", k)
			}
			if m.flash != "read-only" {
				t.Errorf("read-only: %s flashed %q", k, m.flash)
			}
		}
		got := plain(m)
		if !strings.Contains(strings.Split(got, "\n")[0], "RO") {
			t.Error("header does not show RO")
		}
		for _, hint := range []string{"h hold", "K kill"} {
			if strings.Contains(got, hint) {
				t.Errorf("read-only footer offers %q", hint)
			}
		}
	}
	press(m, "?")
	if strings.Contains(plain(m), "kill instance") {
		t.Error("help lists verbs in read-only mode")
	}
	if len(fb.calls) != 0 {
		t.Errorf("calls in read-only: %v", fb.calls)
	}
}

func TestKeyOverrides(t *testing.T) {
	tests := []struct {
		over    map[string]string
		wantErr []string
	}{
		{map[string]string{"hold": "x"}, nil},
		{map[string]string{"hold": "H"}, []string{`"hold"`, "HOST"}}, // H sorts the instances
		{map[string]string{"hold": "r"}, []string{`"hold"`, `"run"`}},
		{map[string]string{"pause": "q"}, []string{`"quit"`, `"pause"`}},
		{map[string]string{"drain": "+"}, nil}, // different scopes: no conflict
		{map[string]string{"nosuch": "x"}, []string{"nosuch"}},
	}
	for _, tc := range tests {
		_, err := New(Options{Backend: &fakeBackend{}, KeyOverrides: tc.over})
		if (err != nil) != (tc.wantErr != nil) {
			t.Errorf("%v: err = %v", tc.over, err)
			continue
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.over, err, w)
			}
		}
	}
	m, fb := newTest(t, Options{KeyOverrides: map[string]string{"hold": "x"}})
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(3, 3))
	runCmd(m, press(m, "h"))
	press(m, "x") // instance hold asks first: tab to Hold, enter
	if m.dlg == nil {
		t.Fatal("x opened no dialog")
	}
	press(m, "tab")
	runCmd(m, press(m, "enter"))
	if len(fb.calls) != 1 || fb.calls[0].what != "hold" {
		t.Errorf("calls = %v", fb.calls)
	}
}

func TestPauseDialogAndStaleSnapshots(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(3, 3))
	press(m, "p")
	if m.dlg == nil || m.dlg.Focus != 0 {
		t.Fatal("pause: no dialog with Cancel focused")
	}
	runCmd(m, press(m, "tab", "enter"))
	if len(fb.calls) != 1 || fb.calls[0] != (call{"paused", "scheduler", "true"}) {
		t.Errorf("calls = %v", fb.calls)
	}
	// A stale result is dropped.
	before := m.snap
	m.Update(snapshotMsg{gen: m.fetchGen - 1, snap: fakeSnapshot(1, 1)})
	if m.snap != before {
		t.Error("stale snapshot applied")
	}
	// One fetch in flight at a time.
	m.fetching = false
	if m.startFetch() == nil || m.startFetch() != nil {
		t.Error("second fetch started while one is in flight")
	}
}

func TestChangedRowsHighlighted(t *testing.T) {
	m, fb := newTest(t, Options{NoColor: true})
	size(m, 120, 40)
	s := fakeSnapshot(3, 0)
	load(t, m, fb, s)
	s2 := fakeSnapshot(3, 0)
	s2.Instances[1].State = "booting"
	load(t, m, fb, s2)
	if !m.table().Changed("i-0001") || m.table().Changed("i-0000") {
		t.Error("change not detected")
	}
	load(t, m, fb, s2)
	if !m.table().Changed("i-0001") {
		t.Error("highlight gone after one refresh")
	}
	load(t, m, fb, s2)
	if m.table().Changed("i-0001") {
		t.Error("highlight still on after two refreshes")
	}
}

func TestDetailsAndLogs(t *testing.T) {
	m, fb := newTest(t, Options{})
	fb.logs = "line one\nline two\x1b[31m\n"
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	m.table().SetCursor("c-000002")
	runCmd(m, press(m, "enter"))
	got := plain(m)
	for _, w := range []string{"Container c-000002", "waiting for i-0002 to boot", "attempts:", "line two"} {
		if !strings.Contains(got, w) {
			t.Errorf("details lack %q", w)
		}
	}
	runCmd(m, press(m, "l"))
	if m.mode != modeLogs || !strings.Contains(plain(m), "line one") || strings.Contains(m.View().Content, "\x1b[31m") {
		t.Errorf("logs view wrong: %q", plain(m))
	}
	press(m, "esc")
	if m.mode != modeDetails {
		t.Error("esc from logs did not go back to the details they were opened from")
	}
	press(m, "esc")
	if m.mode != modeNormal {
		t.Error("esc did not go back")
	}
	press(m, "1", "enter")
	if !strings.Contains(plain(m), "Instance i-0000") {
		t.Error("instance details missing")
	}
	_ = dialog.Open
	_ = queue.Queued
}

// TestReadOnlyBecauseViewer: a console made read-only by a viewer token
// says why, on start, on a verb key and in the help.
func TestReadOnlyBecauseViewer(t *testing.T) {
	const why = "token:bob has the viewer role; verbs need an operator token"
	m, fb := newTest(t, Options{ReadOnly: true, ReadOnlyReason: why})
	size(m, 120, 40)
	m.Init()
	if m.flash != "read-only: "+why {
		t.Errorf("start flash %q", m.flash)
	}
	load(t, m, fb, fakeSnapshot(3, 5))
	runCmd(m, press(m, "K"))
	if m.flash != "read-only: "+why || m.dlg != nil {
		t.Errorf("kill key: flash %q, dialog %v", m.flash, m.dlg != nil)
	}
	press(m, "?")
	if !strings.Contains(plain(m), why) {
		t.Error("help does not say why the console is read-only")
	}
	if len(fb.calls) != 0 {
		t.Errorf("calls: %v", fb.calls)
	}
}

// TestLargeBulkShowsProgress: a verb on more marked containers than one
// bulk request takes goes in several requests, and the footer counts them
// ("12000 of 12000" once all are answered).
func TestLargeBulkShowsProgress(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 160, 40)
	load(t, m, fb, fakeSnapshot(7, 12000))
	press(m, "2", "ctrl+a")
	press(m, "K", "right")
	typeText(m, "12000")
	cmd := press(m, "enter")
	var seen []string
	fb.onBulk = func() { seen = append(seen, m.footer()) }
	runCmd(m, cmd)
	var sizes []int
	for _, b := range fb.bulks {
		sizes = append(sizes, len(b))
	}
	if !slices.Equal(sizes, []int{5000, 5000, 2000}) {
		t.Fatalf("bulk requests of %v containers, want 5000, 5000, 2000", sizes)
	}
	for i, want := range []string{"0 of 12000", "5000 of 12000", "10000 of 12000"} {
		if i >= len(seen) || !strings.Contains(seen[i], want) {
			t.Errorf("footer during request %d: %q, want it to say %q", i+1, seen, want)
		}
	}
}
