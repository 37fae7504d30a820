// Package table is a virtualized table for large, live data sets: a sort
// or filter the user asks for keeps the cursor on its row (by id), and so
// does a refresh that only adds or removes rows, while one that reorders
// them keeps it on its position (k9s' way); the filtered/sorted index is
// recomputed only when the data, filter or sort change, only the visible
// rows are rendered, and rendered lines are cached per row.
//
// It is not bubbles' table: measured side by side (BenchmarkTables,
// BENCHMARKS.md, issue 16) that one takes 1.4–7 ms per frame at 1k–100k
// rows, over the console's 2 ms View budget, and about 10 ms to move its
// cursor; it has no sort or filter, and its cursor is only an index, so a
// sort or filter the user asks for could not follow the selected row.
package table

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"dispatch-tui/engine/termsafe"
	"dispatch-tui/tui/theme"

	"github.com/charmbracelet/x/ansi"
)

// Column describes one column.
type Column struct {
	Title    string
	Width    int  // width in cells (the minimum when Flex)
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
	// ("target:c-1" for OBJECT); the title, lower-cased, always works.
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

type cacheLine struct {
	cells  []string
	plain  string // cells laid out, no paint
	styled string // with state paint
}

// Table is the virtualized table. The zero value is not usable: call New.
type Table struct {
	cols  []Column
	theme *theme.Theme

	rows    []Row
	byID    map[string]int32
	changed []uint32 // refresh generation at which each row last changed
	search  []string // lower-case text per row, built when a filter needs it ("" = not yet)
	gen     uint32

	sortCol  int // -1 = source order
	sortDesc bool
	filter   string
	match    func(string) bool
	invert   bool
	// matchLow is the filter's text when it is plain (not a regexp),
	// lower-cased; viewLow and viewCol are those t.view was filtered by
	// when not inverted ("" = not plain text, or no filter).
	matchLow string
	viewLow  string
	viewCol  int
	matchCol int // column a "name:value" filter applies to; -1 = all

	order []int32 // all rows, sorted
	// numBuf and numTmp are the radix sort's scratch for a numeric column,
	// kept so that a sort at a million rows allocates nothing.
	numBuf, numTmp []numKey
	// keys are column keyCol's numbers as ascending orderedBits, for
	// the current rows (replaced by each refresh; -1 = none).
	keys      []uint64
	keyCol    int
	view      []int32 // order, filtered
	dirtySort bool
	dirtyView bool
	// rowsNew: the rows were replaced since order and view were
	// computed (they index the old ones, so they cannot be shown).
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
		cols:  cols, theme: th, sortCol: -1, matchCol: -1, keyCol: -1, byID: map[string]int32{},
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

func sameContent(cols []Column, a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && (i >= len(cols) || !cols[i].Volatile) {
			return false
		}
	}
	return true
}

// SetRows replaces the data (one refresh). Rows whose cells differ from
// the previous refresh, or that are new, are flagged as changed.
func (t *Table) SetRows(rows []Row) {
	t.install(t.Base().Prepare(rows))
}

// Base is what Prepare compares new rows with: the table's data at one
// moment. Take it on the goroutine that owns the table; Prepare may then
// run on any goroutine (the table replaces the slices and map it holds and
// never changes them in place).
type Base struct {
	gen     uint32
	cols    []Column
	rows    []Row
	byID    map[string]int32
	changed []uint32
	search  []string
	sortCol int
}

// Base returns the table's current data for Prepare.
func (t *Table) Base() Base {
	return Base{gen: t.gen, cols: t.cols, rows: t.rows, byID: t.byID, changed: t.changed, search: t.search, sortCol: t.sortCol}
}

// Prepared is a refresh computed by Prepare, for SetPrepared.
type Prepared struct {
	base    uint32 // the gen of the Base it was computed from
	rows    []Row
	byID    map[string]int32
	changed []uint32
	search  []string
	keys    []uint64 // the sort column's keys (numericKeys), if numeric
	keyCol  int
}

// Prepare computes what SetRows(rows) would do to a table in state b: the
// index by id and which rows changed. For 100,000 rows that is tens of
// milliseconds, better spent off the UI goroutine.
func (b Base) Prepare(rows []Row) *Prepared {
	first := b.gen == 0 && len(b.rows) == 0
	gen := b.gen + 1
	p := &Prepared{base: b.gen, rows: rows, byID: make(map[string]int32, len(rows)),
		changed: make([]uint32, len(rows)), search: make([]string, len(rows)), keyCol: -1}
	if c := b.sortCol; c >= 0 && c < len(b.cols) && b.cols[c].Numeric {
		if ks, ok := numericKeys(rows, c); ok {
			p.keys, p.keyCol = ks, c
		}
	}
	for i := range rows {
		r := &rows[i]
		p.byID[r.ID] = int32(i)
		if first {
			continue
		}
		j, ok := b.byID[r.ID]
		switch {
		case !ok:
			p.changed[i] = gen
		case !sameContent(b.cols, b.rows[j].Cells, r.Cells) || b.rows[j].State != r.State:
			p.changed[i] = gen
		default:
			p.changed[i] = b.changed[j]
			p.search[i] = b.search[j]
		}
	}
	return p
}

// SetPrepared installs a Prepare result, or, when the table was refreshed
// since its Base was taken, sets its rows the slow way.
func (t *Table) SetPrepared(p *Prepared) {
	if p.base != t.gen {
		t.SetRows(p.rows)
		return
	}
	t.install(p)
}

func (t *Table) install(p *Prepared) {
	if t.pend {
		// The job's result would index the rows replaced here: drop it
		// (and stop the job); ensure recomputes from the new rows.
		t.supersede()
	}
	if t.reorder == nil && !t.dirtySort && !t.dirtyView && t.cursorPos < len(t.view) {
		// The ids shown above the cursor before the refresh (the row
		// slices and maps are replaced by a refresh, never changed).
		r := &refreshed{pos: t.cursorPos, oldByID: t.byID, above: make([]string, t.cursorPos)}
		for k, i := range t.view[:t.cursorPos] {
			r.above[k] = t.rows[i].ID
		}
		t.reorder = r
	}
	t.gen = p.base + 1
	t.rows, t.byID, t.changed, t.search = p.rows, p.byID, p.changed, p.search
	t.keys, t.keyCol = p.keys, p.keyCol
	for id := range t.marks {
		if _, ok := p.byID[id]; !ok {
			delete(t.marks, id)
		}
	}
	if len(t.cache) > 4*max(t.height, 64) {
		clear(t.cache)
	}
	t.dirtySort = true
	t.rowsNew = true
}

// Len returns the number of rows loaded; Shown the number after the filter.
func (t *Table) Len() int { return len(t.rows) }

// Shown returns the number of rows that pass the filter.
func (t *Table) Shown() int { t.ensure(); return len(t.view) }

// Changed reports whether the row was changed by one of the last two refreshes.
func (t *Table) Changed(id string) bool {
	i, ok := t.byID[id]
	return ok && t.isChanged(i)
}

func (t *Table) isChanged(i int32) bool {
	c := t.changed[i]
	return c != 0 && t.gen-c < 2
}

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

// SortBy sorts by the column whose SortKey is key; sorting by the same
// column again inverts it. It reports whether a column has that key.
func (t *Table) SortBy(key string) bool {
	for i, c := range t.cols {
		if c.SortKey != "" && c.SortKey == key {
			if t.sortCol == i {
				t.sortDesc = !t.sortDesc
			} else {
				t.sortCol, t.sortDesc = i, false
				t.relayout() // the sorted column is never dropped
			}
			t.dirtySort = true
			t.hdr = ""
			return true
		}
	}
	return false
}

// Sort returns the sorted column (-1 = none) and whether it is descending.
func (t *Table) Sort() (int, bool) { return t.sortCol, t.sortDesc }

// SetSort sets the sort directly (col -1 = source order).
func (t *Table) SetSort(col int, desc bool) {
	if col != t.sortCol {
		t.relayout()
	}
	t.sortCol, t.sortDesc = col, desc
	t.dirtySort = true
	t.hdr = ""
}

// relayout forgets column widths and rendered lines.
func (t *Table) relayout() {
	t.widths = nil
	t.hdr = ""
	clear(t.cache)
}

var metas = regexp.MustCompile(`[\\^$.|?*+()\[\]{}]`)

// SetFilter sets the filter: a substring (case-insensitive), or a regular
// expression when the text uses regexp syntax and compiles; a leading !
// inverts it.
func (t *Table) SetFilter(f string) {
	if f == t.filter {
		return
	}
	t.filter = f
	t.dirtyView = true
	t.matchLow = ""
	pat, inv := f, false
	if strings.HasPrefix(pat, "!") {
		pat, inv = pat[1:], true
	}
	t.invert = inv
	t.matchCol, pat = t.columnFilter(pat)
	if pat == "" {
		t.match = nil
		return
	}
	if metas.MatchString(pat) {
		if re, err := regexp.Compile("(?i)" + pat); err == nil {
			t.match = re.MatchString
			return
		}
	}
	low := strings.ToLower(pat)
	t.match = func(s string) bool { return strings.Contains(s, low) }
	t.matchLow = low
}

// FilterError says why a filter that looks like a regular expression
// (it uses regexp syntax) does not compile; SetFilter then matches it as
// text. nil when it compiles or is plain text.
func FilterError(f string) error {
	pat := strings.TrimPrefix(f, "!")
	if !metas.MatchString(pat) {
		return nil
	}
	_, err := regexp.Compile("(?i)" + pat)
	return err
}

// Filter returns the filter text.
func (t *Table) Filter() string { return t.filter }

// SearchJob returns a function that builds the search text of the current
// rows off the UI goroutine (it reads only the rows, which SetRows
// replaces and never changes, and its own copy of the texts already
// built), or nil when every row has one. Hand its result to SetSearch.
// Building them for 100,000 rows takes longer than a frame; done ahead, the
// first filter keystroke after a refresh only matches.
func (t *Table) SearchJob() func() SearchIndex {
	if !slices.Contains(t.search, "") {
		return nil
	}
	rows, search, gen := t.rows, slices.Clone(t.search), t.gen
	return func() SearchIndex {
		fillSearch(rows, search)
		return SearchIndex{gen: gen, search: search}
	}
}

// SearchIndex is the result of a SearchJob.
type SearchIndex struct {
	gen    uint32
	search []string
}

// SetSearch installs a SearchJob's result if the rows have not been
// replaced since the job was made.
func (t *Table) SetSearch(s SearchIndex) {
	if s.gen == t.gen && len(s.search) == len(t.rows) {
		t.search = s.search
	}
}

// fillSearch sets search[i] for every row whose text is "", in one
// allocation for all of them (their texts are substrings of it).
func fillSearch(rows []Row, search []string) {
	size := 0
	for i := range rows {
		if search[i] == "" {
			for _, c := range rows[i].Cells {
				size += len(c) + 1
			}
			size += len(rows[i].Hidden) + 1
		}
	}
	if size == 0 {
		return
	}
	var b strings.Builder
	b.Grow(size)
	type span struct{ row, from, to int }
	spans := make([]span, 0, len(rows))
	for i := range rows {
		if search[i] != "" {
			continue
		}
		from := b.Len()
		for _, c := range rows[i].Cells {
			writeLower(&b, c)
			b.WriteByte(' ')
		}
		writeLower(&b, rows[i].Hidden)
		b.WriteByte(' ')
		spans = append(spans, span{i, from, b.Len()})
	}
	all := b.String()
	for _, sp := range spans {
		search[sp.row] = all[sp.from:sp.to]
	}
}

// writeLower writes s in lower case; most cells have nothing to lower and
// are copied as they are.
func writeLower(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			b.WriteString(s[:i])
			b.WriteString(strings.ToLower(s[i:]))
			return
		}
	}
	b.WriteString(s)
}

// numericKeys is column c's numbers of rows as ascending orderedBits;
// false if a row has none for c. Read in one pass: through t.rows
// (two dependent loads per row) they are most of a numeric sort's cost.
func numericKeys(rows []Row, c int) ([]uint64, bool) {
	ks := make([]uint64, len(rows))
	for i := range rows {
		nums := rows[i].Nums
		if c >= len(nums) {
			return nil, false
		}
		ks[i] = orderedBits(nums[c], false)
	}
	return ks, true
}

// numKey is a row index and its number as orderedBits.
// narrows reports whether the filter is plain text containing the plain
// text t.view was filtered by, on the same column and neither inverted:
// typing on in the filter then re-filters only the rows shown.
func (t *Table) narrows() bool {
	return t.matchLow != "" && !t.invert && t.viewLow != "" && t.viewCol == t.matchCol &&
		strings.Contains(t.matchLow, t.viewLow)
}

type numKey struct {
	k uint64
	i int32
}

// orderedBits maps f to an integer in the same order as cmp.Compare puts
// floats (NaN first, -0 equal to 0), inverted for a descending sort.
func orderedBits(f float64, desc bool) uint64 {
	if f == 0 {
		f = 0 // -0 too
	}
	u := math.Float64bits(f)
	switch {
	case f != f:
		u = 0
	case u>>63 == 1:
		u = ^u
	default:
		u |= 1 << 63
	}
	if desc {
		u = ^u
	}
	return u
}

// radixSort sorts ks by k, equal keys in their order (LSD, a byte per
// pass). A byte every key shares costs no pass: small integers such as
// priorities sort in two or three. tmp is scratch of the same length; the
// sorted slice is ks or tmp.
func radixSort(ks, tmp []numKey) []numKey {
	if len(ks) == 0 {
		return ks
	}
	// The bytes in which some key differs from the first: only those
	// need a pass.
	var diff uint64
	for _, k := range ks {
		diff |= k.k ^ ks[0].k
	}
	for b := range 8 {
		shift := uint(8 * b)
		if byte(diff>>shift) == 0 {
			continue
		}
		var count [256]int
		c := &count
		for _, k := range ks {
			c[byte(k.k>>shift)]++
		}
		pos := 0
		for d := range c {
			pos, c[d] = pos+c[d], pos
		}
		for _, k := range ks {
			d := byte(k.k >> shift)
			tmp[c[d]] = k
			c[d]++
		}
		ks, tmp = tmp, ks
	}
	return ks
}

type strKey struct {
	k string
	i int32
}

// ensure recomputes the sorted and filtered indexes if needed and puts the
// cursor back on its row; on a table of asyncMin rows or more, a sort or
// filter change is left to a job (OrderJob) and the rows shown meanwhile
// are the previous ones.
func (t *Table) ensure() {
	if !t.dirtySort && !t.dirtyView {
		return
	}
	if t.asyncMin > 0 && len(t.rows) >= t.asyncMin && !t.rowsNew && (t.dirtySort || t.pendSort || t.match != nil) {
		t.request()
		return
	}
	if t.pend {
		// A filter cleared (the view is the order, at once) replaces
		// the one being computed.
		t.supersede()
	}
	r := t.work(false).run()
	t.reclaim(&r)
	t.apply(r)
}

// refreshed is the state before a refresh that relocate compares with.
type refreshed struct {
	pos     int              // cursor position
	oldByID map[string]int32 // the rows before
	above   []string         // ids shown above the cursor
}

// reordered reports whether a refresh moved the cursor row relative to
// the rows that were there before (q is its new position): rows only
// added or removed above it are not a reorder, rows that changed places
// with it are.
func (t *Table) reordered(r *refreshed, q int) bool {
	before := 0 // old rows still there that were above it
	for _, id := range r.above {
		if _, ok := t.byID[id]; ok {
			before++
		}
	}
	now := 0 // old rows above it now
	for _, i := range t.view[:q] {
		if _, ok := r.oldByID[t.rows[i].ID]; ok {
			now++
		}
	}
	return now != before
}

// relocate finds the cursor row in the view. When a refresh reorders
// the rows, the cursor keeps its position (k9s' way: it does not leap
// after its row); when rows are only added or removed above it, and on a
// sort or filter the user asks for, it follows its row. If the row is
// gone, the cursor stays at the same position (on whatever row is there
// now).
func (t *Table) relocate() {
	r := t.reorder
	t.reorder = nil
	if len(t.view) == 0 {
		t.cursorPos, t.top = 0, 0
		return
	}
	if i, ok := t.byID[t.cursorID]; ok && t.cursorID != "" {
		for p, j := range t.view {
			if j == i {
				if r != nil && t.reordered(r, p) {
					t.cursorPos = r.pos
					break
				}
				t.cursorPos = p
				t.clampTop()
				return
			}
		}
	}
	t.cursorPos = min(max(t.cursorPos, 0), len(t.view)-1)
	t.cursorID = t.rows[t.view[t.cursorPos]].ID
	t.clampTop()
}

func (t *Table) page() int { return max(t.height-1, 1) }

func (t *Table) clampTop() {
	p := t.page()
	if t.cursorPos < t.top {
		t.top = t.cursorPos
	}
	if t.cursorPos >= t.top+p {
		t.top = t.cursorPos - p + 1
	}
	t.top = max(min(t.top, len(t.view)-p), 0)
}

// Move moves the cursor by delta rows (clamped).
func (t *Table) Move(delta int) {
	t.ensure()
	if len(t.view) == 0 {
		return
	}
	t.cursorPos = min(max(t.cursorPos+delta, 0), len(t.view)-1)
	t.cursorID = t.rows[t.view[t.cursorPos]].ID
	t.clampTop()
}

// PageDown and friends.
func (t *Table) PageDown() { t.Move(t.page()) }

// PageUp moves up a page.
func (t *Table) PageUp() { t.Move(-t.page()) }

// Home moves to the first row.
func (t *Table) Home() { t.Move(-len(t.rows) - 1) }

// End moves to the last row.
func (t *Table) End() { t.Move(len(t.rows) + 1) }

// SetCursor puts the cursor on the row with that id (if shown).
func (t *Table) SetCursor(id string) {
	t.ensure()
	t.cursorID = id
	t.relocate()
}

// ClickRow moves the cursor to the y-th visible line (0 = first row).
func (t *Table) ClickRow(y int) {
	t.ensure()
	p := t.top + y
	if p >= 0 && p < len(t.view) {
		t.Move(p - t.cursorPos)
	}
}

// Cursor returns the id of the row under the cursor ("" when empty).
func (t *Table) Cursor() string {
	t.ensure()
	if len(t.view) == 0 {
		return ""
	}
	return t.cursorID
}

// CursorRow returns the row under the cursor.
func (t *Table) CursorRow() (Row, bool) {
	id := t.Cursor()
	if id == "" {
		return Row{}, false
	}
	return t.rows[t.byID[id]], true
}

// ToggleMark marks or unmarks the cursor row.
func (t *Table) ToggleMark() {
	id := t.Cursor()
	if id == "" {
		return
	}
	if _, ok := t.marks[id]; ok {
		delete(t.marks, id)
	} else {
		t.marks[id] = struct{}{}
	}
}

// MarkAll marks every shown row, or clears the marks when any are set.
func (t *Table) MarkAll() {
	t.ensure()
	if len(t.marks) > 0 {
		clear(t.marks)
		return
	}
	for _, i := range t.view {
		t.marks[t.rows[i].ID] = struct{}{}
	}
}

// Marked returns the marked ids in display order.
func (t *Table) Marked() []string {
	if len(t.marks) == 0 {
		return nil
	}
	t.ensure()
	out := make([]string, 0, len(t.marks))
	for _, i := range t.order {
		if _, ok := t.marks[t.rows[i].ID]; ok {
			out = append(out, t.rows[i].ID)
		}
	}
	return out
}

// MarkedShown returns the marked ids the filter shows, in display order,
// and how many marked rows it hides.
func (t *Table) MarkedShown() (shown []string, hidden int) {
	if len(t.marks) == 0 {
		return nil, 0
	}
	t.ensure()
	for _, i := range t.view {
		if _, ok := t.marks[t.rows[i].ID]; ok {
			shown = append(shown, t.rows[i].ID)
		}
	}
	return shown, len(t.marks) - len(shown)
}

// ClearMarks unmarks every row.
func (t *Table) ClearMarks() { clear(t.marks) }

// SetPending flags rows as waiting for a verb's confirmation (or clears it).
func (t *Table) SetPending(id string, on bool) {
	if on {
		t.pending[id] = struct{}{}
	} else {
		delete(t.pending, id)
	}
}

// Pending reports whether a row is pending.
func (t *Table) Pending(id string) bool { _, ok := t.pending[id]; return ok }

// Row returns a row by id.
func (t *Table) Row(id string) (Row, bool) {
	i, ok := t.byID[id]
	if !ok {
		return Row{}, false
	}
	return t.rows[i], true
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
	if cl != nil && cellsEqual(cl.cells, r.Cells) {
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
	cl = &cacheLine{cells: r.Cells, plain: plain.String(), styled: styled.String()}
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
	for p := t.top; p < end; p++ {
		i := t.view[p]
		r := &t.rows[i]
		cl := t.line(r)
		_, marked := t.marks[r.ID]
		_, pending := t.pending[r.ID]
		g0, g1 := byte(' '), byte(' ')
		if p == t.cursorPos {
			g0 = '>'
		}
		switch {
		case pending:
			g1 = '~'
		case marked:
			g1 = '*'
		case t.isChanged(i):
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
		case t.isChanged(i):
			b.WriteString(t.theme.Changed.Render(gutter + cl.plain))
		default:
			b.WriteString(gutter)
			b.WriteString(cl.styled)
		}
		n++
	}
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
