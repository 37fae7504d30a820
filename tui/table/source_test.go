package table

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"dispatch-tui/tui/theme"
)

// slotRows is a Source as an owner keeps one: rows changed in place,
// taken out as gone in their slots, added at the end; each row's cells
// are built when asked for (and counted).
type slotRows struct {
	mu      sync.RWMutex
	ids     []string
	prio    []int
	gone    []bool
	ver     []uint32
	version uint32
	built   int // rows built by Row
}

func (s *slotRows) Read(f func(Reader)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f(s)
}

func (s *slotRows) Len() int { return len(s.ids) }
func (s *slotRows) Live() int {
	n := 0
	for _, g := range s.gone {
		if !g {
			n++
		}
	}
	return n
}
func (s *slotRows) Gone(i int) bool { return s.gone[i] }
func (s *slotRows) ID(i int) string { return s.ids[i] }
func (s *slotRows) Index(id string) (int, bool) {
	for i, x := range s.ids {
		if x == id && !s.gone[i] {
			return i, true
		}
	}
	return 0, false
}
func (s *slotRows) Row(i int) Row {
	s.built++
	return Row{ID: s.ids[i], Cells: []string{s.ids[i], fmt.Sprint(s.prio[i])}}
}
func (s *slotRows) Num(i, c int) (float64, bool) { return float64(s.prio[i]), c == 1 }
func (s *slotRows) Text(i, c int) string {
	if c == 0 {
		return s.ids[i]
	}
	return fmt.Sprint(s.prio[i])
}
func (s *slotRows) AppendText(dst []byte, i, c int) []byte { return append(dst, s.Text(i, c)...) }
func (s *slotRows) Cells(int) int                          { return 2 }
func (s *slotRows) Hidden(i int) string                    { return strings.ToUpper(s.ids[i]) }
func (s *slotRows) Ver(i int) uint32                       { return s.ver[i] }
func (s *slotRows) Version() uint32                        { return s.version }
func (s *slotRows) Need(int) int                           { return 0 }

// change is the owner's refresh: set prio of ids, take gone out, add new
// ones.
func (s *slotRows) change(prio map[string]int, gone []string, add ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	for i, id := range s.ids {
		if p, ok := prio[id]; ok && !s.gone[i] {
			s.prio[i], s.ver[i] = p, s.version
		}
		if slices.Contains(gone, id) {
			s.gone[i], s.ver[i] = true, s.version
		}
	}
	for _, id := range add {
		s.ids, s.prio, s.gone, s.ver = append(s.ids, id), append(s.prio, 0), append(s.gone, false), append(s.ver, s.version)
	}
}

func newSlotRows(n int) *slotRows {
	s := &slotRows{}
	for i := range n {
		s.ids = append(s.ids, fmt.Sprint("c-", i))
		s.prio = append(s.prio, i%3)
		s.gone = append(s.gone, false)
		s.ver = append(s.ver, 0)
	}
	return s
}

// A table over a Source builds the cells of the rows it shows only; a
// refresh of the same source changed in place shows its rows gone, new
// and changed (flagged), sorted and filtered as asked; while a large
// table's job computes the new order, the previous one stays shown and
// still names the same rows.
func TestSourceChangedInPlace(t *testing.T) {
	src := newSlotRows(1000)
	cols := []Column{{Title: "ID", SortKey: "I"}, {Title: "PRIO", SortKey: "P", Numeric: true}}
	tb := New(cols, theme.New("dark", true, true))
	tb.SetAsync(100)
	tb.SetSize(80, 11) // 10 rows
	tb.SetSource(src)
	tb.View()
	if src.built > 10 || src.built == 0 {
		t.Fatalf("a frame of 10 rows built %d rows", src.built)
	}
	tb.SetCursor("c-5")

	src.change(map[string]int{"c-7": 9}, []string{"c-1", "c-2"}, "c-1000")
	tb.SetSource(src)
	if got := tb.Cursor(); got != "c-5" {
		t.Errorf("rows taken out above the cursor: it is on %q, want c-5", got)
	}
	if tb.Len() != 999 || !tb.Changed("c-7") || !tb.Changed("c-1000") || tb.Changed("c-6") {
		t.Errorf("after the change: %d rows, changed c-7 %v, c-1000 %v, c-6 %v", tb.Len(), tb.Changed("c-7"), tb.Changed("c-1000"), tb.Changed("c-6"))
	}
	if got := shownIDs(tb)[:3]; !slices.Equal(got, []string{"c-0", "c-3", "c-4"}) {
		t.Errorf("first rows %v, want c-0 c-3 c-4", got)
	}

	tb.SortBy("P")
	tb.SortBy("P") // descending
	settle(tb)
	if got := shownIDs(tb)[0]; got != "c-7" {
		t.Errorf("sorted by PRIO descending, first row %s, want c-7", got)
	}
	before := shownIDs(tb)
	src.change(map[string]int{"c-4": 20}, []string{"c-7"})
	tb.SetSource(src)
	if tb.Busy() != "sorting" {
		t.Fatalf("a refresh of 999 rows sorted: busy %q, want a job", tb.Busy())
	}
	if got := shownIDs(tb); !slices.Equal(got, before) {
		t.Errorf("while the job runs the rows shown moved: %v, want %v", got[:3], before[:3])
	}
	settle(tb)
	if got := shownIDs(tb)[:2]; got[0] != "c-4" || slices.Contains(shownIDs(tb), "c-7") {
		t.Errorf("after the refresh's sort: first rows %v (want c-4 first), c-7 shown %v", got, slices.Contains(shownIDs(tb), "c-7"))
	}

	tb.SetFilter("C-10")
	settle(tb)
	for _, id := range shownIDs(tb) {
		if !strings.HasPrefix(id, "c-10") {
			t.Fatalf("filter c-10 shows %s", id)
		}
	}
	if tb.Shown() != 12 { // c-10, c-100..c-109, c-1000
		t.Errorf("filter c-10 shows %d rows, want 12", tb.Shown())
	}
}
