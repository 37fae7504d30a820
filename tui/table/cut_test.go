package table

import (
	"strings"

	"dispatch-tui/tui/theme"

	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestFitMiddle(t *testing.T) {
	cases := []struct {
		in    string
		w     int
		right bool
		want  string
	}{
		{"c-0123456789abcdef", 18, false, "c-0123456789abcdef"},
		{"c-0123456789abcdef", 12, false, "c-012…abcdef"},
		{"host-10-231-0-17", 10, false, "host…-0-17"},
		{"short", 10, false, "short     "},
		{"short", 10, true, "     short"},
		{"abcdefgh", 4, false, "abc…"}, // too narrow for a middle cut
		{"ジョブ-番号-00012345", 12, false, "ジョ…0012345"},
	}
	for _, tc := range cases {
		got := FitMiddle(tc.in, tc.w, tc.right)
		if got != tc.want {
			t.Errorf("FitMiddle(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
		if w := ansi.StringWidth(got); w != tc.w {
			t.Errorf("FitMiddle(%q, %d) is %d wide", tc.in, tc.w, w)
		}
	}
}

// Ids in a CutMiddle column keep their distinguishing tails.
func TestCutMiddleColumn(t *testing.T) {
	tb := New([]Column{{Title: "ID", Width: 10, CutMiddle: true}, {Title: "X", Width: 3}}, theme.New("dark", true, true))
	tb.SetSize(20, 5)
	tb.SetRows([]Row{{ID: "a", Cells: []string{"c-00000000001", "x"}}, {ID: "b", Cells: []string{"c-00000000002", "y"}}})
	v := ansi.Strip(tb.View())
	for _, want := range []string{"c-00…00001", "c-00…00002"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}
