// The containers view's rows: the backend's compact rows as the table's
// Source, each row's cells built only when the row is shown, and the
// numbers and text a sort or filter reads taken from the compact row.

package tui

import (
	"maps"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/table"
	"dispatch-tui/tui/theme"
)

// The containers view's columns, by index (containerColumns).
const (
	colID = iota
	colName
	colState
	colPrio
	colCPU
	colMem
	colOn
	colTries
	colAge
	colReason
	nCtrCols
)

// ctrSource is the containers table's source over one backend.Rows; the
// same ctrSource is handed to the table while the Rows is the same, so
// that a refresh applied in place keeps the table's order of slots.
type ctrSource struct {
	rows *backend.Rows
	now  func() time.Time
	// sizes are the MEM cells made so far, by size: a queue's containers
	// ask for a few sizes, and a filter reads every row's. Readers on
	// any goroutine share it read-only; one that made cells publishes a
	// copy with them added, up to sizesMax.
	sizes atomic.Pointer[map[int64]string]
}

// sizesMax bounds ctrSource.sizes; sizes past it are made each time.
const sizesMax = 256

// Read implements table.Source.
func (s *ctrSource) Read(f func(table.Reader)) {
	var made map[int64]string
	s.rows.Read(func(v backend.Slots) {
		r := &ctrReader{v: v, now: s.now()}
		r.nowNs, r.nanos = unixNanos(r.now)
		if p := s.sizes.Load(); p != nil {
			r.sizes = *p
		}
		f(r)
		made = r.made
	})
	if made == nil {
		return
	}
	old := s.sizes.Load()
	all := make(map[int64]string, len(made)+16)
	if old != nil {
		if len(*old) >= sizesMax {
			return
		}
		maps.Copy(all, *old)
	}
	maps.Copy(all, made)
	s.sizes.CompareAndSwap(old, &all) // lost to another reader: made again later
}

// ctrReader reads the rows inside one Read.
type ctrReader struct {
	v   backend.Slots
	now time.Time
	// nowNs is now in unix nanoseconds, where nanos says it has them
	// (ageOf).
	nowNs int64
	nanos bool
	// sizes are the source's MEM cells when the read began, made those
	// this reader added (memText).
	sizes, made map[int64]string
	// posFold is the filter whose search of a place in the line's
	// words posWordsHold holds (reasonHolds).
	posFold      *table.Fold
	posWordsHold bool
	// block holds the cells Text made (keep).
	block []byte
}

func (r *ctrReader) Len() int                    { return r.v.Len() }
func (r *ctrReader) Live() int                   { return r.v.Live() }
func (r *ctrReader) Gone(i int) bool             { return r.v.Gone(i) }
func (r *ctrReader) ID(i int) string             { return r.v.At(i).ID }
func (r *ctrReader) Index(id string) (int, bool) { return r.v.Index(id) }
func (r *ctrReader) Ver(i int) uint32            { return r.v.Ver(i) }
func (r *ctrReader) Version() uint32             { return r.v.Version() }

func (r *ctrReader) Need(c int) int {
	name, inst := r.v.Widest()
	switch c {
	case colName:
		return name
	case colOn:
		return inst
	}
	return 0
}

// Row builds row i's cells as the containers view shows them.
func (r *ctrReader) Row(i int) table.Row {
	c := r.v.At(i)
	cells := make([]string, nCtrCols)
	for k := range cells {
		cells[k] = r.Text(i, k)
	}
	nums := make([]float64, nCtrCols)
	for k := range nums {
		nums[k], _ = r.Num(i, k)
	}
	st := string(c.State)
	if c.Failed() {
		st = theme.StateFailed
	}
	return table.Row{ID: c.ID, State: st, Cells: cells, Nums: nums, Hidden: c.Tags}
}

// Num is the number a numeric column sorts by; AGE by the time it was
// created, so that the order does not move as the ages count up.
func (r *ctrReader) Num(i, col int) (float64, bool) {
	c := r.v.At(i)
	switch col {
	case colPrio:
		return float64(c.Priority), true
	case colCPU:
		return float64(c.VCPUs), true
	case colMem:
		return float64(c.RAM), true
	case colTries:
		return float64(c.Attempts), true
	case colAge:
		return ageKey(c.CreatedAt), true
	}
	return 0, true
}

// Text is row i's cell in column col: the row's own string where the
// cell is one, else made now.
func (r *ctrReader) Text(i, col int) string {
	c := r.v.At(i)
	switch col {
	case colID:
		return c.ID
	case colName:
		return containerName(c)
	case colState:
		return containerState(c)
	case colOn:
		return c.InstanceID
	case colAge:
		return ageText(r.now, c.Created())
	case colMem:
		return r.memText(c.RAM)
	case colReason:
		// A row with a place is not read: it waits (Slots.Place).
		pos := r.v.Place(i)
		switch {
		case pos > 0:
			return r.keep(c.AppendReason(r.block[len(r.block):], pos))
		case !exited(c):
			return c.Reason
		case 0 <= c.Exit && int(c.Exit) < len(exitTexts):
			return exitTexts[c.Exit]
		}
		return r.keep(appendReason(r.block[len(r.block):], c, pos))
	}
	var b [24]byte
	return string(appendNum(b[:0], c, col))
}

// exitTexts are REASON's texts of the common exit codes, made once and
// shared by the rows that show them: a sort tells a column's few texts
// apart by their address alone (docs/design.md §9.1), and a filter keeps
// its answer for a shared text by it (table.Fold's InShared).
var exitTexts = func() (texts [256]string) {
	for code := range texts {
		c := backend.Row{State: view.Complete, HasExit: true, Exit: int32(code)}
		texts[code] = string(appendReason(nil, &c, 0))
	}
	return texts
}()

// NumberWords and Number implement table.Numbered: most of a long
// queue's REASON cells are a place in the line, which a sort orders by
// its number without reading the row (Slots.Place: a row with a place
// is waiting, so its REASON is no exit code).
func (r *ctrReader) NumberWords(col int) (head, tail string, ok bool) {
	if col != colReason {
		return "", "", false
	}
	head, tail = backend.PositionWords()
	return head, tail, true
}

func (r *ctrReader) Number(i, col int) uint64 {
	if col != colReason {
		return 0
	}
	return uint64(max(r.v.Place(i), 0))
}

// cellBlock is the size of the blocks a reader makes its REASON cells
// in (keep).
const cellBlock = 4096

// keep returns b, made by appending to the free end of the reader's
// block, as a string: where it fit, in the block, else on its own and
// the next in a new block. A sort by REASON reads a million rows' cells,
// and a string allocated for each was 400,000 allocations a sort.
func (r *ctrReader) keep(b []byte) string {
	n := len(r.block)
	if len(b) > 0 && len(b) <= cap(r.block)-n {
		// Append did not move it: the block's bytes from n on, which
		// no string kept so far holds, and no later cell writes.
		r.block = r.block[:n+len(b)]
		return unsafe.String(&r.block[n], len(b))
	}
	r.block = make([]byte, 0, cellBlock)
	return string(b)
}

// AppendText appends Text(i, col) without making a string: a filter
// reads every row's cells.
func (r *ctrReader) AppendText(dst []byte, i, col int) []byte {
	c := r.v.At(i)
	switch col {
	case colID:
		return append(dst, c.ID...)
	case colName:
		return append(dst, containerName(c)...)
	case colState:
		return appendStateMark(append(dst, c.State...), c)
	case colOn:
		return append(dst, c.InstanceID...)
	case colAge:
		if c.CreatedAt == 0 {
			return append(dst, ageText(r.now, time.Time{})...)
		}
		return appendAge(dst, r.ageOf(c))
	case colMem:
		return append(dst, r.memText(c.RAM)...)
	case colReason:
		return appendReason(dst, c, r.v.Place(i))
	}
	return appendNum(dst, c, col)
}

// ContainsFold implements table.FoldReader. Most cells take few values
// over a million rows: each value's cell is searched once per filter
// (table.Fold's Known and InShared), the id and name, each row's own, in
// every row. The id first, as what is most often looked for (a row it
// holds stops there; last, a filter every id holds searched every other
// cell first: BENCHMARKS.md, helper filter), the name last.
func (r *ctrReader) ContainsFold(i int, f *table.Fold) bool {
	c := r.v.At(i)
	var b [24]byte
	return f.In(c.ID) || f.InShared(string(c.State)) ||
		// The mark begins with a space: searched apart (table.Fold).
		f.InSmall(slotMark, appendStateMark(b[:0], c)) ||
		r.numbersHold(c, i, f) ||
		f.InShared(c.InstanceID) ||
		r.reasonHolds(c, i, f, b[:0]) ||
		f.InShared(c.Tags) ||
		f.In(containerName(c))
}

// numbersHold reports whether one of row i's cells of numbers (c its
// row) holds f: PRIO, CPU, MEM, TRIES and AGE, each a function of a key
// made of its numbers, those of an alphabet (Alphabet) only where the
// filter may be in them.
func (r *ctrReader) numbersHold(c *backend.Row, i int, f *table.Fold) bool {
	// Slots and keys small where the numbers are (table.Fold.Known).
	tries, triesKey := colTries, uint64(c.Attempts)<<4|uint64(c.MaxAttempts)
	if uint32(c.Attempts) >= 16 || uint32(c.MaxAttempts) >= 16 {
		tries, triesKey = slotTriesWide, uint64(uint32(c.Attempts))<<32|uint64(uint32(c.MaxAttempts))
	}
	// Known is inlined, a call for each cell was a third of its cost.
	if !f.Skip(colPrio) {
		key := uint64(uint32(c.Priority))
		if held, ok := f.Known(colPrio, key); held || !ok && r.searchCell(f, i, colPrio, colPrio, key) {
			return true
		}
	}
	if !f.Skip(colCPU) {
		key := uint64(uint32(c.VCPUs))
		if held, ok := f.Known(colCPU, key); held || !ok && r.searchCell(f, i, colCPU, colCPU, key) {
			return true
		}
	}
	if !f.Skip(colMem) {
		key := uint64(c.RAM)
		if held, ok := f.Known(colMem, key); held || !ok && r.searchCell(f, i, colMem, colMem, key) {
			return true
		}
	}
	if !f.Skip(colTries) {
		if held, ok := f.Known(tries, triesKey); held || !ok && r.searchCell(f, i, colTries, tries, triesKey) {
			return true
		}
	}
	if !f.Skip(colAge) { // the age's key takes longest to make: made last
		key := r.ageCellKey(c)
		if held, ok := f.Known(colAge, key); held || !ok && r.searchCell(f, i, colAge, colAge, key) {
			return true
		}
	}
	return false
}

// cellHolds reports whether row i's cell in column col, whose text is a
// function of key alone (slot naming what key is), holds f: made and
// searched only when f keeps no answer for the key.
func (r *ctrReader) cellHolds(f *table.Fold, i, col, slot int, key uint64) bool {
	held, ok := f.Known(slot, key)
	return held || !ok && r.searchCell(f, i, col, slot, key)
}

// Slots of table.Fold's answers beyond the columns': a STATE cell's
// mark, an exited container's REASON ("exit N", by N), and TRIES whose
// numbers do not fit a small key.
const (
	slotMark = nCtrCols + iota
	slotExit
	slotTriesWide
)

// searchCell is cellHolds without a kept answer: it keeps one.
func (r *ctrReader) searchCell(f *table.Fold, i, col, slot int, key uint64) bool {
	var b [48]byte
	held := f.InBytes(r.AppendText(b[:0], i, col))
	f.Remember(slot, key, held)
	return held
}

// ageCellKey is what row c's AGE text is a function of: its count and
// unit (ageUnits), below 256 for a count under 64; the largest key for
// none.
func (r *ctrReader) ageCellKey(c *backend.Row) uint64 {
	if c.CreatedAt == 0 {
		return math.MaxUint64
	}
	n, unit := ageUnits(r.ageOf(c))
	return uint64(n)<<2 | uint64(unit)
}

// ageOf is r.now.Sub(c.Created()) for c created (CreatedAt != 0), as a
// difference of nanoseconds where that is the same: a filter reads a
// million rows' ages, and the times' Sub was a tenth of its work.
func (r *ctrReader) ageOf(c *backend.Row) time.Duration {
	d := r.nowNs - c.CreatedAt
	if !r.nanos || (r.nowNs^c.CreatedAt)&(r.nowNs^d) < 0 { // overflowed
		return r.now.Sub(c.Created())
	}
	return time.Duration(d)
}

// unixNanos is t.UnixNano(), and whether t has one (years 1678 to 2262).
func unixNanos(t time.Time) (int64, bool) {
	if t.Before(time.Unix(0, math.MinInt64)) || t.After(time.Unix(0, math.MaxInt64)) {
		return 0, false
	}
	return t.UnixNano(), true
}

// reasonHolds reports whether row i's REASON cell (c its row) holds f:
// an exit code's searched once per code, a shared reason once per copy,
// the words of a place in the line once per filter and reader.
func (r *ctrReader) reasonHolds(c *backend.Row, i int, f *table.Fold, buf []byte) bool {
	if exited(c) {
		return r.cellHolds(f, i, colReason, slotExit, uint64(uint32(c.Exit)))
	}
	pos := r.v.Place(i)
	switch {
	case pos == 0:
		return f.InShared(c.Reason)
	case !positionSplits:
		return f.InBytes(c.AppendReason(buf, pos))
	}
	if r.posFold != f {
		head, tail := backend.PositionWords()
		r.posFold, r.posWordsHold = f, f.In(head) || f.In(tail)
	}
	// The number is written as PRIO's are: not searched where those
	// are skipped.
	return r.posWordsHold || (!f.Skip(colPrio) && f.InBytes(strconv.AppendInt(buf, int64(pos), 10)))
}

// positionSplits: the words of a place in the line end and begin with a
// space around its number, so that a filter without a space is in the
// reason exactly when it is in the words or the number (table.Fold).
var positionSplits = func() bool {
	head, tail := backend.PositionWords()
	return strings.HasSuffix(head, " ") && strings.HasPrefix(tail, " ")
}()

// memText is MEM's text of n, made once per size (ctrSource.sizes).
func (r *ctrReader) memText(n int64) string {
	if t, ok := r.sizes[n]; ok {
		return t
	}
	if t, ok := r.made[n]; ok {
		return t
	}
	if r.made == nil {
		r.made = make(map[int64]string)
	}
	t := fmtBytes(n)
	r.made[n] = t
	return t
}

// appendNum appends c's cell in a column of numbers: PRIO, CPU or TRIES.
func appendNum(dst []byte, c *backend.Row, col int) []byte {
	switch col {
	case colPrio:
		return strconv.AppendInt(dst, int64(c.Priority), 10)
	case colCPU:
		return strconv.AppendInt(dst, int64(c.VCPUs), 10)
	}
	dst = strconv.AppendInt(dst, int64(c.Attempts), 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, int64(c.MaxAttempts), 10)
}

// Columns and Alphabet implement table.Alphabets: a filter with a letter
// in it makes no number or age cell (TestCellAlphabets checks them).
func (r *ctrReader) Columns() int { return nCtrCols }

func (r *ctrReader) Alphabet(col int) string {
	switch col {
	case colPrio, colCPU:
		return numAlphabet
	case colTries:
		return numAlphabet + "/"
	case colAge:
		return ageAlphabet
	case colMem:
		return view.SizeAlphabet
	}
	return ""
}

// numAlphabet is what strconv.AppendInt writes.
const numAlphabet = "-0123456789"

// Cells is the number of columns; Hidden the labels, which the filter
// matches too.
func (r *ctrReader) Cells(int) int       { return nCtrCols }
func (r *ctrReader) Hidden(i int) string { return r.v.At(i).Tags }

// appendReason appends the REASON cell.
func appendReason(dst []byte, c *backend.Row, pos int32) []byte {
	if exited(c) {
		return strconv.AppendInt(append(dst, "exit "...), int64(c.Exit), 10)
	}
	return c.AppendReason(dst, pos)
}

// exited reports whether REASON shows c's exit code.
func exited(c *backend.Row) bool { return c.State == view.Complete && c.HasExit }
