// Package table is a virtualized table for large, live data sets: a sort
// or filter the user asks for keeps the cursor on its row (by id), and so
// does a refresh that only adds or removes rows, while one that reorders
// them keeps it on its position (k9s' way); the filtered/sorted index is
// recomputed only when the data, filter or sort change, only the visible
// rows are rendered, and rendered lines are cached per row. The rows are
// a Source (source.go): the table holds their order, not their cells, and
// a million containers' cells are built only for the rows on screen.
//
// It is not bubbles' table: measured side by side (BenchmarkTables,
// BENCHMARKS.md) that one takes 1.4–7 ms per frame at 1k–100k
// rows, over the console's 2 ms View budget, and about 10 ms to move its
// cursor; it has no sort or filter, and its cursor is only an index, so a
// sort or filter the user asks for could not follow the selected row.
package table

import (
	"sync/atomic"

	"dispatch-tui/tui/theme"
)

// Column describes one column.
type Column struct {
	Title string
	Width int // width in cells (the minimum when Flex or MaxWidth)
	// MaxWidth lets a column (names, ids) grow to it from the width left
	// over, before the Flex column takes the rest: at 120 columns a
	// name is not cut while REASON has room to spare.
	MaxWidth int
	Flex     bool // takes the width left over
	Priority int  // 0 is always shown; higher priorities are dropped first on narrow terminals
	Right    bool // right-aligned
	Numeric  bool // sort by Row.Nums instead of the text
	SortKey  string
	State    bool // painted by the row's state
	Volatile bool // changes on its own (ages): not a "changed" row
	// CutMiddle cuts a long value in the middle (head…tail): ids and
	// names differ in their tails, which a cut at the end loses.
	CutMiddle bool
	// Alias is another name for the column in a column filter
	// ("object:c-1" for TARGET); the title, lower-cased, always works.
	Alias string
}

// Row is one row. Cells are parallel to the columns; Nums too when any
// column is Numeric.
type Row struct {
	ID    string
	Cells []string
	Nums  []float64
	State string
	// Hidden is text the filter matches that no column shows (a
	// container's labels); "" for most rows.
	Hidden string
}

// Table is the virtualized table. The zero value is not usable: call New.
type Table struct {
	cols  []Column
	theme *theme.Theme

	// src is the rows (source.go); slots and nLive are its Len and Live
	// at the last refresh, installs counts the refreshes.
	src          Source
	slots, nLive int
	installs     uint64
	// vers are the source's versions at the last three refreshes: a row
	// whose Ver is newer than vers[0] changed in one of the last two.
	vers [3]uint32

	sortCol  int // -1 = source order
	sortDesc bool
	filter   string
	match    func([]byte) bool
	invert   bool
	// matchLow is the filter's text when it is plain (not a regexp),
	// lower-cased; viewLow and viewCol are those t.view was filtered by
	// when not inverted ("" = not plain text, or no filter).
	matchLow string
	viewLow  string
	viewCol  int
	matchCol int // column a "name:value" filter applies to; -1 = all

	order []int32 // all rows, sorted (slots of src)
	// numBuf and numTmp are the radix sort's scratch for a numeric column,
	// kept so that a sort at a million rows allocates nothing.
	numBuf, numTmp []numKey
	view           []int32 // order, filtered
	dirtySort      bool
	dirtyView      bool
	// rowsNew: the source was replaced since order and view were
	// computed (they index another's slots, so they cannot be shown).
	rowsNew bool
	// shared: a job may be reading order (or view), so it is not
	// rewritten in place.
	shared bool
	async

	cursorID  string
	cursorPos int
	top       int
	// reorder is what a refresh needs to tell whether the rows above the
	// cursor were reordered (nil: no refresh since the last ensure).
	reorder *refreshed

	width, height int
	widths        []int  // laid-out widths, 0 = hidden
	need          []int  // widest cell of each column that may grow (Reader.Need)
	hdr           string // rendered header line ("" = render it again)
	cache         map[string]*cacheLine

	marks   map[string]struct{}
	pending map[string]struct{}
}

// GutterWidth is the width of the marker gutter at the left of each row.
const GutterWidth = 2

// New returns an empty table.
func New(cols []Column, th *theme.Theme) *Table {
	return &Table{
		async: async{live: new(atomic.Uint64)},
		cols:  cols, theme: th, sortCol: -1, matchCol: -1, src: emptySource,
		cache: map[string]*cacheLine{}, marks: map[string]struct{}{}, pending: map[string]struct{}{},
	}
}

// SetTheme changes the theme (drops the line cache).
func (t *Table) SetTheme(th *theme.Theme) {
	t.theme = th
	t.hdr = ""
	clear(t.cache)
}

// Columns returns the columns.
func (t *Table) Columns() []Column { return t.cols }

// Len returns the number of rows loaded; Shown the number after the filter.
func (t *Table) Len() int { return t.nLive }

// Shown returns the number of rows that pass the filter.
func (t *Table) Shown() int { t.ensure(); return len(t.view) }

// SetSize sets the table's size; height includes the header line.
func (t *Table) SetSize(w, h int) {
	if w != t.width {
		t.width = w
		t.widths = nil
		t.hdr = ""
		clear(t.cache)
	}
	t.height = h
}

// Row returns a row by id (its cells built now for a Source's).
func (t *Table) Row(id string) (r Row, ok bool) {
	t.src.Read(func(rd Reader) {
		var i int
		if i, ok = rd.Index(id); ok {
			r = rd.Row(i)
		}
	})
	return r, ok
}

// id is the id of slot i.
func (t *Table) id(i int32) (id string) {
	t.src.Read(func(rd Reader) { id = rd.ID(int(i)) })
	return id
}
