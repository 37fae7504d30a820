// The tables of ls, fitted to the terminal's width.

package cli

import (
	"dispatch-tui/engine/termsafe"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// column describes one column of an ls table and how it gives way when the
// table is wider than the terminal: ids are never cut; free text (flex) is
// cut first, down to min; then columns are dropped, highest drop first.
type column struct {
	name string
	wide bool // only with -o wide
	flex bool // free text: may be cut, with "…"
	min  int  // a flex column is not cut below this width
	drop int  // 0 = never dropped; else higher is dropped sooner
	// clock: the value moves with the clock (AGE), so ls -w does not take
	// its change for a change of the row.
	clock bool
}

// table is a list of rows under columns; every cell is escaped for the
// terminal already (termsafe).
type table struct {
	cols []column
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// layout is how a table is drawn.
type layout struct {
	width   int  // columns available; 0 = no limit (piped)
	wide    bool // -o wide: every column, nothing cut
	headers bool
}

const gap = 2 // spaces between columns

// render writes the table fitted to l.width.
func (t *table) render(w io.Writer, l layout) error {
	var show []int
	for i, c := range t.cols {
		if !c.wide || l.wide {
			show = append(show, i)
		}
	}
	natural := make([]int, len(t.cols))
	for _, i := range show {
		if l.headers {
			natural[i] = ansi.StringWidth(t.cols[i].name)
		}
		for _, r := range t.rows {
			natural[i] = max(natural[i], ansi.StringWidth(r[i]))
		}
	}
	width := append([]int(nil), natural...)
	if l.width > 0 && !l.wide {
		show = t.fit(show, natural, width, l.width)
	}
	if l.width > 0 && l.wide && spanOf(show, natural) > l.width {
		return t.renderRecords(w, show, l.width)
	}
	var b strings.Builder
	line := func(cells []string) {
		b.Reset()
		for k, i := range show {
			cell := cells[i]
			if cw := ansi.StringWidth(cell); cw > width[i] {
				cell = ansi.Truncate(cell, width[i], "…")
			}
			b.WriteString(cell)
			if k < len(show)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-ansi.StringWidth(cell)+gap))
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, strings.TrimRight(b.String(), " \n")+"\n")
	}
	if l.headers {
		names := make([]string, len(t.cols))
		for i, c := range t.cols {
			names[i] = c.name
		}
		line(names)
	}
	for _, r := range t.rows {
		line(r)
	}
	return nil
}

// spanOf is the width of a line of the shown columns at the given widths.
func spanOf(show, width []int) int {
	total := gap * max(len(show)-1, 0)
	for _, i := range show {
		total += width[i]
	}
	return total
}

// renderRecords writes each row as a record, one "COLUMN  value" line per
// column and a blank line between rows: what -o wide gives when its table
// is wider than the terminal, so that every column is shown uncut and no
// line wraps mid-table (as psql's expanded display does). A value longer
// than the line continues on the next, under itself.
func (t *table) renderRecords(w io.Writer, show []int, limit int) error {
	keyWidth := 0
	for _, i := range show {
		keyWidth = max(keyWidth, ansi.StringWidth(t.cols[i].name))
	}
	indent := strings.Repeat(" ", keyWidth+gap)
	room := max(limit-len(indent), 10)
	var b strings.Builder
	for n, r := range t.rows {
		if n > 0 {
			b.WriteByte('\n')
		}
		for _, i := range show {
			name := t.cols[i].name
			b.WriteString(name)
			b.WriteString(strings.Repeat(" ", keyWidth-ansi.StringWidth(name)+gap))
			b.WriteString(strings.Join(termsafe.WrapWords(strings.TrimRight(r[i], " "), room), "\n"+indent))
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fit cuts flex columns, then drops columns, until the shown ones fit in
// limit (or nothing more may give way); it sets width and returns the
// columns still shown.
func (t *table) fit(show, natural, width []int, limit int) []int {
	for {
		total := gap * (len(show) - 1)
		for _, i := range show {
			width[i] = natural[i]
			total += width[i]
		}
		excess := total - limit
		// Cut free text, from the last column back.
		for k := len(show) - 1; k >= 0 && excess > 0; k-- {
			i := show[k]
			if c := t.cols[i]; c.flex && width[i] > c.min {
				cut := min(excess, width[i]-c.min)
				width[i] -= cut
				excess -= cut
			}
		}
		if excess <= 0 {
			return show
		}
		victim := -1
		for k, i := range show {
			if d := t.cols[i].drop; d > 0 && (victim < 0 || d > t.cols[show[victim]].drop) {
				victim = k
			}
		}
		if victim < 0 {
			return show
		}
		show = append(show[:victim:victim], show[victim+1:]...)
	}
}
