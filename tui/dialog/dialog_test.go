package dialog

import (
	"strings"
	"testing"

	"dispatch-tui/tui/theme"

	"github.com/charmbracelet/x/ansi"
)

// Every line of the box is as wide as the box, in terminal cells, whatever
// the body holds: wide characters, a body longer than the box, colours.
func TestViewLinesAreBoxWide(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  []string
		width int
	}{
		{"ascii", []string{"Hold c-000001?"}, 80},
		{"wide characters", []string{"Hold 日本語のジョブ?"}, 80},
		{"truncated", []string{strings.Repeat("long ", 40)}, 60},
		{"truncated wide", []string{strings.Repeat("長い", 40)}, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Confirm{Title: "Hold", Body: tc.body, OK: "Hold", Expect: "c-1", Hint: "type it"}
			box := d.View(theme.New("dark", true, false), tc.width, 0)
			lines := strings.Split(box, "\n")
			want := ansi.StringWidth(lines[0])
			for i, l := range lines {
				if w := ansi.StringWidth(l); w != want {
					t.Errorf("line %d is %d cells, want %d: %q", i, w, want, ansi.Strip(l))
				}
			}
		})
	}
}

// A dialog taller than the room it gets keeps its title, typed input and
// buttons, and is no taller than that room.
func TestViewFitsHeight(t *testing.T) {
	d := New("Kill 40 containers?", "Kill", "40", "Apply kill to 40 containers.", strings.Repeat("c-000000 ", 40))
	for _, h := range []int{0, 30, 12, 9} {
		box := ansi.Strip(d.View(theme.New("dark", true, true), 60, h))
		n := strings.Count(box, "\n") + 1
		if h > 0 && n > h {
			t.Errorf("height %d: box is %d lines", h, n)
		}
		for _, want := range []string{"Kill 40 containers?", "Type 40", "> Cancel <", "[ Kill ]"} {
			if !strings.Contains(box, want) {
				t.Errorf("height %d: box lacks %q:\n%s", h, want, box)
			}
		}
	}
}
