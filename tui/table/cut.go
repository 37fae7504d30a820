// Cutting values to fit a cell: the middle of ids, column filters.

package table

import (
	"strings"

	"dispatch-tui/engine/termsafe"

	"github.com/charmbracelet/x/ansi"
)

// FitMiddle is Fit, except that a value too long for w cells keeps its
// head and its tail with "…" between them: "c-0123…89abcdef". Ids and
// generated names share their heads and differ in their tails.
func FitMiddle(s string, w int, right bool) string {
	if w < 5 || cellWidth(s) <= w {
		return Fit(s, w, right)
	}
	if !isASCII(s) {
		s = termsafe.Escape(s)
		if ansi.StringWidth(s) <= w {
			return Fit(s, w, right)
		}
		// Cut by cells: the head to half the room, the tail to the rest.
		head := ansi.Truncate(s, (w-1)/2, "")
		tail := ansi.TruncateLeft(s, ansi.StringWidth(s)-(w-1-ansi.StringWidth(head)), "")
		return Fit(head+"…"+tail, w, right)
	}
	// The tail gets the larger half: that is where ids differ.
	head := (w - 1) / 2
	tail := w - 1 - head
	return s[:head] + "…" + s[len(s)-tail:]
}

// columnFilter splits a "name:value" filter whose name is a column's title
// (any case) or Alias: the value is then matched against that column only.
// It returns -1 and pat unchanged otherwise.
func (t *Table) columnFilter(pat string) (int, string) {
	name, val, ok := strings.Cut(pat, ":")
	if !ok || name == "" {
		return -1, pat
	}
	for i, c := range t.cols {
		if strings.EqualFold(name, c.Title) || (c.Alias != "" && strings.EqualFold(name, c.Alias)) {
			return i, val
		}
	}
	return -1, pat
}

// AtTop reports whether the cursor is on the first shown row (a view of
// the newest first follows new rows while it is).
func (t *Table) AtTop() bool {
	t.ensure()
	return t.cursorPos == 0
}
