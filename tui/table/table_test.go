package table

import (
	"reflect"
	"strings"
	"testing"

	"dispatch-tui/tui/theme"

	"github.com/charmbracelet/x/ansi"
)

func TestNarrowDropsLowPriority(t *testing.T) {
	cols := []Column{{Title: "ID", Width: 10}, {Title: "LOW", Width: 30, Priority: 5}, {Title: "MID", Width: 10, Priority: 1, Flex: true}}
	tb := New(cols, theme.New("dark", true, true))
	tb.SetRows([]Row{{ID: "a", Cells: []string{"a", "low", "mid"}}})
	tests := []struct {
		w    int
		want []bool
	}{{80, []bool{true, true, true}}, {40, []bool{true, false, true}}, {15, []bool{true, false, false}}}
	for _, tc := range tests {
		tb.SetSize(tc.w, 5)
		got := tb.Visible()
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("width %d: visible %v, want %v", tc.w, got, tc.want)
				break
			}
		}
		for _, l := range strings.Split(tb.View(), "\n") {
			if ansi.StringWidth(l) > tc.w {
				t.Errorf("width %d: line too wide: %q", tc.w, l)
			}
		}
	}
}

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		s     string
		w     int
		right bool
		want  string
	}{
		{"abc", 5, false, "abc  "},
		{"abc", 5, true, "  abc"},
		{"abcdef", 4, false, "abc…"},
		{"日本語", 4, false, "日… "},
		{"日本語", 6, false, "日本語"},
		{"日本", 5, true, " 日本"},
		{"e\u0301t\u00e9", 4, false, "e\u0301t\u00e9 "}, // a combining accent takes no cell
	} {
		if got := Fit(tc.s, tc.w, tc.right); got != tc.want {
			t.Errorf("Fit(%q,%d) = %q, want %q", tc.s, tc.w, got, tc.want)
		}
	}
}

func TestSortedColumnIsNeverDropped(t *testing.T) {
	cols := []Column{
		{Title: "ID", Width: 10, SortKey: "I"},
		{Title: "NAME", Width: 10, SortKey: "N", Priority: 5},
		{Title: "STATE", Width: 10, SortKey: "S", Priority: 1},
	}
	tb := New(cols, theme.New("dark", true, true))
	tb.SetSize(24, 10)
	if tb.Visible()[1] {
		t.Fatalf("setup: NAME shown at width 24")
	}
	tb.SortBy("N")
	if !tb.Visible()[1] {
		t.Fatalf("sorted column NAME dropped at width 24")
	}
}

func TestFitStripsControlCharacters(t *testing.T) {
	for _, in := range []string{"evil\x1b[2Jname", "bell\x07", "multi\nline", "c1\u009bcsi"} {
		got := Fit(in, 12, false)
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("Fit(%q) = %q keeps control character %U", in, got, r)
			}
		}
	}
}

// The filter matches each row's cells and hidden text case-insensitively,
// also across letters outside ASCII.
func TestFilterIgnoresCase(t *testing.T) {
	rows := func(names ...string) []Row {
		var rs []Row
		for _, n := range names {
			rs = append(rs, Row{ID: n, Cells: []string{n, strings.ToUpper(n) + "-Ä"}, Hidden: "team=" + n})
		}
		return rs
	}
	tb := New([]Column{{Title: "A"}, {Title: "B"}}, theme.New("dark", true, true))
	tb.SetSize(80, 10)
	tb.SetRows(rows("alpha", "beta", "gamma"))
	for f, want := range map[string]int{"BETA-ä": 1, "team=GAMMA": 1, "-Ä": 3, "b:alpha": 1, "a:team": 0} {
		tb.SetFilter(f)
		if tb.Shown() != want {
			t.Errorf("filter %q shows %d rows, want %d", f, tb.Shown(), want)
		}
	}
}

// A refresh prepared off the owning goroutine gives the same result as
// SetRows; one prepared from a table refreshed since falls back to it.
func TestSetPrepared(t *testing.T) {
	row := func(id, v string) Row { return Row{ID: id, Cells: []string{id, v}} }
	newT := func() *Table {
		tb := New([]Column{{Title: "A"}, {Title: "B"}}, theme.New("dark", true, true))
		tb.SetSize(80, 10)
		tb.SetRows([]Row{row("a", "1"), row("b", "1")})
		return tb
	}
	next := []Row{row("a", "1"), row("b", "2"), row("c", "1")}

	direct, prepared := newT(), newT()
	direct.SetRows(next)
	prepared.SetPrepared(prepared.Base().Prepare(next))
	for _, id := range []string{"a", "b", "c"} {
		if direct.Changed(id) != prepared.Changed(id) {
			t.Errorf("row %s: changed %v via SetRows, %v via SetPrepared", id, direct.Changed(id), prepared.Changed(id))
		}
	}
	if !prepared.Changed("b") || !prepared.Changed("c") || prepared.Changed("a") {
		t.Errorf("changed a/b/c = %v/%v/%v, want false/true/true", prepared.Changed("a"), prepared.Changed("b"), prepared.Changed("c"))
	}

	// Prepared against data that was replaced meanwhile: compared again.
	stale := newT()
	p := stale.Base().Prepare(next)
	stale.SetRows([]Row{row("a", "1"), row("b", "2")})
	stale.SetPrepared(p)
	if stale.Len() != 3 || stale.Changed("b") != true || !stale.Changed("c") {
		t.Errorf("fallback: len %d, b changed %v, c changed %v", stale.Len(), stale.Changed("b"), stale.Changed("c"))
	}
}

// The help says sort keys are marked in the header: each column's sort
// letter is underlined (reversed without colour), and the sorted column
// shows its direction.
func TestHeaderMarksSortKeys(t *testing.T) {
	cols := []Column{{Title: "ID", Width: 6, SortKey: "I"}, {Title: "PRIO", Width: 5, SortKey: "P"}, {Title: "GPU", Width: 3}}
	for _, noColor := range []bool{false, true} {
		on, off := keyOn, keyOff
		if noColor {
			on, off = keyOnPlain, keyOffPlain
		}
		tb := New(cols, theme.New("dark", true, noColor))
		tb.SetRows([]Row{{ID: "a", Cells: []string{"a", "1", "0"}}})
		tb.SetSize(40, 5)
		h := strings.Split(tb.View(), "\n")[0]
		for _, want := range []string{on + "I" + off + "D", on + "P" + off + "RIO"} {
			if !strings.Contains(h, want) {
				t.Errorf("noColor %v: header %q lacks %q", noColor, h, want)
			}
		}
		if strings.Contains(h, on+"G") {
			t.Errorf("noColor %v: GPU has no sort key but is marked", noColor)
		}
		tb.SortBy("P")
		tb.SortBy("P")
		if h := ansi.Strip(strings.Split(tb.View(), "\n")[0]); !strings.Contains(h, "PRIO↓") || ansi.StringWidth(h) != 40 {
			t.Errorf("noColor %v: sorted header %q (%d cells)", noColor, h, ansi.StringWidth(h))
		}
	}
}

// A refresh that only adds or removes rows above the cursor leaves it on
// its row; one that reorders the rows leaves it on its position.
func TestCursorOnRefresh(t *testing.T) {
	rows := func(ids ...string) []Row {
		out := make([]Row, len(ids))
		for i, id := range ids {
			out[i] = Row{ID: id, Cells: []string{id}}
		}
		return out
	}
	tb := New([]Column{{Title: "ID", Width: 6, SortKey: "I"}}, theme.New("dark", true, true))
	tb.SetSize(20, 20)
	tb.SetRows(rows("a", "b", "c", "d", "e"))
	tb.SetCursor("c")
	tests := []struct {
		name string
		ids  []string
		want string
	}{
		{"rows added above: follows its row", []string{"x", "y", "a", "b", "c", "d", "e"}, "c"},
		{"rows added below", []string{"x", "y", "a", "b", "c", "d", "e", "f"}, "c"},
		{"a row removed above: follows its row", []string{"y", "a", "b", "c", "d", "e", "f"}, "c"},
		{"its row moves to the end: keeps the position", []string{"y", "a", "b", "d", "e", "f", "c"}, "d"},
		{"rows above swap among themselves: follows its row", []string{"a", "y", "b", "d", "e", "f", "c"}, "d"},
		{"its row moves above others: keeps the position", []string{"d", "a", "y", "b", "e", "f", "c"}, "b"},
		{"its row is gone: keeps the position", []string{"d", "a", "y", "e", "f", "c"}, "e"},
		{"unchanged", []string{"d", "a", "y", "e", "f", "c"}, "e"},
	}
	for _, tc := range tests {
		tb.SetRows(rows(tc.ids...))
		if got := tb.Cursor(); got != tc.want {
			t.Errorf("%s: cursor on %q, want %q", tc.name, got, tc.want)
		}
	}
	// A sort the user asks for follows the row.
	tb.SortBy("I")
	if got := tb.Cursor(); got != "e" {
		t.Errorf("after sorting: cursor on %q, want e", got)
	}
}

// A refresh with the same ids in the same order keeps the index by id,
// and still tells the changed row from the others.
func TestRefreshOfTheSameIDs(t *testing.T) {
	tb := New([]Column{{Title: "ID", Width: 6}, {Title: "V", Width: 6}}, theme.New("dark", true, true))
	tb.SetSize(40, 10)
	mk := func(v string) []Row {
		return []Row{{ID: "a", Cells: []string{"a", "1"}}, {ID: "b", Cells: []string{"b", v}}, {ID: "c", Cells: []string{"c", "3"}}}
	}
	tb.SetRows(mk("2"))
	tb.SetRows(mk("2"))
	before := tb.src.(*sliceSource).byID
	tb.SetRows(mk("9"))
	if reflect.ValueOf(tb.src.(*sliceSource).byID).UnsafePointer() != reflect.ValueOf(before).UnsafePointer() {
		t.Error("the same ids in the same order made a new index")
	}
	if r, ok := tb.Row("b"); !ok || r.Cells[1] != "9" || !tb.Changed("b") || tb.Changed("a") || tb.Changed("c") {
		t.Errorf("after b changed: row %v (%v), changed a=%v b=%v c=%v", r, ok, tb.Changed("a"), tb.Changed("b"), tb.Changed("c"))
	}
}
