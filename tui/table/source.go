// Where a table's rows come from: a Source its owner keeps (a million
// containers as compact records, changed in place by each refresh), or a
// slice of prepared rows (SetRows). The table keeps no cells of its own:
// it asks the source for the rows it shows, and for the numbers and text
// a sort or filter reads, row by row.

package table

// Reader reads a source's rows at one moment (inside Source.Read).
// Rows are addressed by slot: a row keeps its slot for as long as the
// source is the same object, a row taken out stays in its slot as Gone,
// and new rows take new slots at the end, so an order the table computed
// earlier still indexes the same rows after the owner changed some.
type Reader interface {
	// Len is the number of slots, gone ones included.
	Len() int
	// Live is the number of rows that are not gone.
	Live() int
	Gone(i int) bool
	ID(i int) string
	// Index is the slot of the row with that id (false: none, or gone).
	Index(id string) (int, bool)
	// Row builds row i as it is shown: its cells, numbers and state.
	Row(i int) Row
	// Num is row i's number in numeric column c (false: it has none).
	Num(i, c int) (float64, bool)
	// Text is row i's cell in column c.
	Text(i, c int) string
	// AppendText appends Text(i, c) without making a string of it (a
	// filter on one column reads every row's).
	AppendText(dst []byte, i, c int) []byte
	// Cells is how many cells row i has, and Hidden its text that the
	// filter matches and no column shows: what the filter matches of a
	// row is each cell's text and then the hidden text (appendSearch).
	Cells(i int) int
	Hidden(i int) string
	// Ver is the version of the source at which row i last changed;
	// Version the source's current one (a row is flagged changed while
	// its Ver is newer than the version two refreshes back).
	Ver(i int) uint32
	Version() uint32
	// Need is the widest cell of column c, for a column that may grow
	// (Column.MaxWidth); 0 when not known.
	Need(c int) int
}

// Source is a table's rows. Read calls f with a Reader valid during f
// only; a sort or filter job calls it from another goroutine, so the
// owner must not change rows while a Read is under way (a lock), and f
// is kept short (a job reads a chunk of rows at a time).
type Source interface {
	Read(f func(r Reader))
}

// sliceSource is the rows of SetRows: they never change once given (a
// refresh makes another).
type sliceSource struct {
	rows    []Row
	byID    map[string]int32
	ver     []uint32 // version at which each row last changed
	version uint32
	need    []int
}

func (s *sliceSource) Read(f func(r Reader)) { f(s) }
func (s *sliceSource) Len() int              { return len(s.rows) }
func (s *sliceSource) Live() int             { return len(s.rows) }
func (s *sliceSource) Gone(int) bool         { return false }
func (s *sliceSource) ID(i int) string       { return s.rows[i].ID }
func (s *sliceSource) Row(i int) Row         { return s.rows[i] }
func (s *sliceSource) Ver(i int) uint32      { return s.ver[i] }
func (s *sliceSource) Version() uint32       { return s.version }

func (s *sliceSource) Index(id string) (int, bool) {
	i, ok := s.byID[id]
	return int(i), ok
}

func (s *sliceSource) Num(i, c int) (float64, bool) {
	if n := s.rows[i].Nums; c < len(n) {
		return n[c], true
	}
	return 0, false
}

func (s *sliceSource) Text(i, c int) string {
	if cs := s.rows[i].Cells; c < len(cs) {
		return cs[c]
	}
	return ""
}

func (s *sliceSource) AppendText(dst []byte, i, c int) []byte { return append(dst, s.Text(i, c)...) }

func (s *sliceSource) Cells(i int) int     { return len(s.rows[i].Cells) }
func (s *sliceSource) Hidden(i int) string { return s.rows[i].Hidden }

func (s *sliceSource) Need(c int) int {
	if c < len(s.need) {
		return s.need[c]
	}
	return 0
}

var emptySource Source = &sliceSource{byID: map[string]int32{}}
