// Marks and pending rows: the rows marked for a verb and those waiting for
// its confirmation.

package table

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
	t.src.Read(func(rd Reader) {
		for _, i := range t.view {
			t.marks[rd.ID(int(i))] = struct{}{}
		}
	})
}

// Marked returns the marked ids in display order.
func (t *Table) Marked() []string {
	if len(t.marks) == 0 {
		return nil
	}
	t.ensure()
	out := make([]string, 0, len(t.marks))
	t.src.Read(func(rd Reader) {
		for _, i := range t.order {
			if id := rd.ID(int(i)); t.has(id) {
				out = append(out, id)
			}
		}
	})
	return out
}

// MarkedShown returns the marked ids the filter shows, in display order,
// and how many marked rows it hides.
func (t *Table) MarkedShown() (shown []string, hidden int) {
	if len(t.marks) == 0 {
		return nil, 0
	}
	t.ensure()
	t.src.Read(func(rd Reader) {
		for _, i := range t.view {
			if id := rd.ID(int(i)); t.has(id) {
				shown = append(shown, id)
			}
		}
	})
	return shown, len(t.marks) - len(shown)
}

// has reports whether id is marked.
func (t *Table) has(id string) bool {
	_, ok := t.marks[id]
	return ok
}

// Mark marks the row id (a verb's failures stay marked for another try).
func (t *Table) Mark(id string) { t.marks[id] = struct{}{} }

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
