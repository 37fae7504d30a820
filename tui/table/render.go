// Rendering: column layout, the header, cached row lines, View, and
// fitting cells to their widths.

package table

import (
	"cmp"
	"slices"
	"strings"

	"dispatch-tui/engine/termsafe"

	"github.com/charmbracelet/x/ansi"
)

type cacheLine struct {
	cells  []string
	state  string
	plain  string // cells laid out, no paint
	styled string // with state paint
}

func cellsEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// relayout forgets column widths and rendered lines.
func (t *Table) relayout() {
	t.widths = nil
	t.hdr = ""
	clear(t.cache)
}

// layout picks the columns that fit in the width, by priority.
func (t *Table) layout() []int {
	if t.widths != nil {
		return t.widths
	}
	w := make([]int, len(t.cols))
	idx := make([]int, len(t.cols))
	for i := range idx {
		idx[i] = i
	}
	// Lower priority values are kept first; the sorted column is always
	// kept, so a narrow terminal never hides what the rows are sorted by.
	prio := func(i int) int {
		if i == t.sortCol {
			return -1 << 30
		}
		return t.cols[i].Priority
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(prio(a), prio(b)) })
	used := GutterWidth
	for _, i := range idx {
		need := t.cols[i].Width + 1
		if used+need-1 <= t.width {
			w[i] = t.cols[i].Width
			used += need
		}
	}
	left := t.width - (used - 1)
	// What is left goes first to the columns that may grow, as far as
	// their widest cell needs (names and ids are read whole), the rest
	// to the Flex column.
	grow := left
	for i, c := range t.cols {
		need := 0
		if i < len(t.need) {
			need = t.need[i]
		}
		if d := min(need-c.Width, grow); d > 0 && w[i] > 0 {
			w[i] += d
			grow -= d
			left -= d
		}
	}
	if left > 0 {
		for i, c := range t.cols {
			if c.Flex && w[i] > 0 {
				w[i] += left
				break
			}
		}
	}
	t.widths = w
	return w
}

// Visible reports which columns are shown at the current width.
func (t *Table) Visible() []bool {
	w := t.layout()
	out := make([]bool, len(w))
	for i := range w {
		out[i] = w[i] > 0
	}
	return out
}

// Sort-key letters in the header are underlined (reversed without
// colour, where the whole header is underlined): "the column whose letter
// is marked".
const (
	keyOn, keyOff           = "\x1b[4m", "\x1b[24m"
	keyOnPlain, keyOffPlain = "\x1b[7m", "\x1b[27m"
)

func (t *Table) header() string {
	if t.hdr == "" {
		t.hdr = t.renderHeader()
	}
	return t.hdr
}

func (t *Table) renderHeader() string {
	w := t.layout()
	on, off := keyOn, keyOff
	if t.theme.NoColor {
		on, off = keyOnPlain, keyOffPlain
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", GutterWidth))
	used := GutterWidth
	first := true
	for i, c := range t.cols {
		if w[i] == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
			used++
		}
		first = false
		title := c.Title
		if i == t.sortCol {
			if r := []rune(title); len(r)+1 > w[i] && w[i] > 1 {
				title = string(r[:w[i]-1])
			}
			if t.sortDesc {
				title += "↓"
			} else {
				title += "↑"
			}
		}
		cell := Fit(title, w[i], c.Right)
		used += w[i]
		if used > t.width {
			break
		}
		if k := strings.Index(cell, c.SortKey); c.SortKey != "" && k >= 0 && isASCII(cell[:k+1]) {
			cell = cell[:k] + on + cell[k:k+1] + off + cell[k+1:]
		}
		b.WriteString(cell)
	}
	if used < t.width {
		b.WriteString(strings.Repeat(" ", t.width-used))
	}
	return t.theme.TableHeader.Render(b.String())
}

func (t *Table) line(r *Row) *cacheLine {
	cl := t.cache[r.ID]
	if cl != nil && cl.state == r.State && cellsEqual(cl.cells, r.Cells) {
		return cl
	}
	w := t.layout()
	rowPaint := t.theme.Row(r.State)
	var plain, styled strings.Builder
	first := true
	for i, c := range t.cols {
		if w[i] == 0 {
			continue
		}
		if !first {
			plain.WriteByte(' ')
			styled.WriteByte(' ')
		}
		first = false
		s := ""
		if i < len(r.Cells) {
			s = r.Cells[i]
		}
		var cell string
		if c.CutMiddle {
			cell = FitMiddle(s, w[i], c.Right)
		} else {
			cell = Fit(s, w[i], c.Right)
		}
		plain.WriteString(cell)
		if c.State {
			styled.WriteString(t.theme.State(r.State).Render(cell))
		} else {
			styled.WriteString(rowPaint.Render(cell)) // failures stand out
		}
	}
	pad := t.width - GutterWidth - cellWidth(plain.String())
	if pad > 0 {
		sp := strings.Repeat(" ", pad)
		plain.WriteString(sp)
		styled.WriteString(sp)
	}
	cl = &cacheLine{cells: r.Cells, state: r.State, plain: plain.String(), styled: styled.String()}
	t.cache[r.ID] = cl
	return cl
}

// View renders the header and the visible rows (exactly height lines).
func (t *Table) View() string {
	t.ensure()
	if t.width <= 0 || t.height <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow((t.width + 16) * t.height)
	b.WriteString(t.header())
	n := 1
	end := min(t.top+t.page(), len(t.view))
	t.src.Read(func(rd Reader) {
		for p := t.top; p < end; p++ {
			i := int(t.view[p])
			r := rd.Row(i)
			cl := t.line(&r)
			_, marked := t.marks[r.ID]
			_, pending := t.pending[r.ID]
			changed := t.isChanged(rd, i)
			g0, g1 := byte(' '), byte(' ')
			if p == t.cursorPos {
				g0 = '>'
			}
			switch {
			case pending:
				g1 = '~'
			case marked:
				g1 = '*'
			case changed:
				g1 = '+'
			}
			b.WriteByte('\n')
			gutter := string([]byte{g0, g1})
			switch {
			case p == t.cursorPos:
				b.WriteString(t.theme.Cursor.Render(gutter + cl.plain))
			case pending:
				b.WriteString(t.theme.Pending.Render(gutter + cl.plain))
			case marked:
				b.WriteString(t.theme.Mark.Render(gutter + cl.plain))
			case changed:
				b.WriteString(t.theme.Changed.Render(gutter + cl.plain))
			default:
				b.WriteString(gutter)
				b.WriteString(cl.styled)
			}
			n++
		}
	})
	for ; n < t.height; n++ {
		b.WriteByte('\n')
	}
	return b.String()
}

// isASCII reports whether s is printable ASCII (no control characters).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x7f || s[i] < 0x20 {
			return false
		}
	}
	return true
}

// cellWidth is ansi.StringWidth with a fast path for the common case of
// printable ASCII, where cells and bytes are one to one.
func cellWidth(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return ansi.StringWidth(s)
}

// Fit pads or truncates s (plain text) to exactly w cells.
func Fit(s string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	if isASCII(s) {
		if len(s) > w {
			if w == 1 {
				return s[:1]
			}
			return s[:w-1] + "…"
		}
		if len(s) == w {
			return s
		}
		if right {
			return strings.Repeat(" ", w-len(s)) + s
		}
		return s + strings.Repeat(" ", w-len(s))
	}
	// Cells are one line of text from users and programs: control
	// characters are shown escaped, never sent to the terminal.
	s = termsafe.Escape(s)
	sw := ansi.StringWidth(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = ansi.StringWidth(s)
	}
	if sw < w {
		if right {
			return strings.Repeat(" ", w-sw) + s
		}
		return s + strings.Repeat(" ", w-sw)
	}
	return s
}
