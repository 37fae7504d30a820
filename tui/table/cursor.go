// The cursor: recomputing the view (ensure), keeping the cursor on its row
// across sorts, filters and refreshes, scrolling and moving it.

package table

// ensure recomputes the sorted and filtered indexes if needed and puts the
// cursor back on its row; on a table of asyncMin rows or more, a sort or
// filter change is left to a job (OrderJob) and the rows shown meanwhile
// are the previous ones.
func (t *Table) ensure() {
	if !t.dirtySort && !t.dirtyView {
		return
	}
	if t.asyncMin > 0 && t.nLive >= t.asyncMin && !t.rowsNew && (t.sortCol >= 0 || t.match != nil) {
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
	pos   int      // cursor position
	above []string // ids shown above the cursor
	// old is the source before, and oldLen its slots then; same: it is
	// the source now (a row was there before if its slot was).
	old    Source
	oldLen int
	same   bool
}

// reordered reports whether a refresh moved the cursor row relative to
// the rows that were there before (q is its new position): rows only
// added or removed above it are not a reorder, rows that changed places
// with it are.
func (t *Table) reordered(rd Reader, r *refreshed, q int) bool {
	before := 0 // old rows still there that were above it
	for _, id := range r.above {
		if _, ok := rd.Index(id); ok {
			before++
		}
	}
	now := 0 // old rows above it now
	if r.same {
		for _, i := range t.view[:q] {
			if int(i) < r.oldLen {
				now++
			}
		}
		return now != before
	}
	// Another source (never the one rd reads: its lock is not taken twice).
	r.old.Read(func(o Reader) {
		for _, i := range t.view[:q] {
			if _, ok := o.Index(rd.ID(int(i))); ok {
				now++
			}
		}
	})
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
	found := false
	t.src.Read(func(rd Reader) {
		i, ok := rd.Index(t.cursorID)
		if !ok || t.cursorID == "" {
			return
		}
		for p, j := range t.view {
			if int(j) == i {
				if r != nil && t.reordered(rd, r, p) {
					t.cursorPos = r.pos
					break
				}
				t.cursorPos = p
				found = true
				return
			}
		}
	})
	if found {
		t.clampTop()
		return
	}
	t.cursorPos = min(max(t.cursorPos, 0), len(t.view)-1)
	t.cursorID = t.id(t.view[t.cursorPos])
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
	t.cursorID = t.id(t.view[t.cursorPos])
	t.clampTop()
}

// PageDown and friends.
func (t *Table) PageDown() { t.Move(t.page()) }

// PageUp moves up a page.
func (t *Table) PageUp() { t.Move(-t.page()) }

// Home moves to the first row.
func (t *Table) Home() { t.ensure(); t.Move(-len(t.view) - 1) }

// End moves to the last row.
func (t *Table) End() { t.ensure(); t.Move(len(t.view) + 1) }

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
	return t.Row(id)
}
