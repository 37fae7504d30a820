package table

import (
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
	}{{"abc", 5, false, "abc  "}, {"abc", 5, true, "  abc"}, {"abcdef", 4, false, "abc…"}, {"日本語", 4, false, "日… "}} {
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
