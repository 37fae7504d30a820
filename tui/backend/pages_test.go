package backend

import "testing"

// Rows pushed past a page stay where they are (a full page is never
// reallocated), every slot reads back its row, and a truncate drops the
// slots past it.
func TestPagesNeverMoveFullPages(t *testing.T) {
	var ps pages
	for i := range pageRows {
		ps.push(Row{Seq: uint64(i)})
	}
	first := ps.at(0)
	for i := pageRows; i < 3*pageRows+10; i++ {
		ps.push(Row{Seq: uint64(i)})
	}
	if ps.at(0) != first {
		t.Error("a full page moved when rows were pushed after it")
	}
	for i := range ps.len() {
		if got := ps.at(i).Seq; got != uint64(i) {
			t.Fatalf("slot %d holds row %d", i, got)
		}
	}
	ps.truncate(pageRows + 1)
	if ps.len() != pageRows+1 || len(ps.p) != 2 || ps.at(pageRows).Seq != pageRows {
		t.Errorf("after truncating to %d: %d slots in %d pages", pageRows+1, ps.len(), len(ps.p))
	}
	ps.push(Row{Seq: 7})
	if ps.at(pageRows+1).Seq != 7 {
		t.Error("a push after a truncate did not take the next slot")
	}
	if n := newPages(pageRows + 3); len(n.p) != 2 || cap(n.p[0]) != pageRows || cap(n.p[1]) != 3 {
		t.Errorf("newPages(%d): %d pages", pageRows+3, len(n.p))
	}
}
