// Refreshes: replacing the rows (SetRows, or Base/Prepare off the UI
// goroutine then SetPrepared), which rows changed, and the cursor state a
// refresh keeps for relocate.

package table

import "slices"

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

// Row returns the base's row of id: a refresh may hand it to Prepare
// again when its data did not change (a row's slices are never changed).
func (b Base) Row(id string) (Row, bool) {
	i, ok := b.byID[id]
	if !ok {
		return Row{}, false
	}
	return b.rows[i], true
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
	need    []int // the widest cell of each column that may grow (MaxWidth)
}

// Prepare computes what SetRows(rows) would do to a table in state b: the
// index by id and which rows changed. For 100,000 rows that is tens of
// milliseconds, better spent off the UI goroutine.
func (b Base) Prepare(rows []Row) *Prepared {
	first := b.gen == 0 && len(b.rows) == 0
	gen := b.gen + 1
	// The same ids in the same order (a refresh that only changed rows)
	// keep the index by id: it is never changed, only replaced.
	same := !first && len(rows) == len(b.rows)
	for i := 0; same && i < len(rows); i++ {
		same = rows[i].ID == b.rows[i].ID
	}
	p := &Prepared{base: b.gen, rows: rows, byID: b.byID,
		changed: make([]uint32, len(rows)), search: make([]string, len(rows)), keyCol: -1}
	if !same {
		p.byID = make(map[string]int32, len(rows))
	}
	if c := b.sortCol; c >= 0 && c < len(b.cols) && b.cols[c].Numeric {
		if ks, ok := numericKeys(rows, c); ok {
			p.keys, p.keyCol = ks, c
		}
	}
	p.need = make([]int, len(b.cols))
	for c, col := range b.cols {
		if col.MaxWidth > col.Width {
			for i := range rows {
				if w := cellWidth(rows[i].Cells[c]); w > p.need[c] {
					p.need[c] = min(w, col.MaxWidth)
				}
			}
		}
	}
	for i := range rows {
		r := &rows[i]
		if first {
			p.byID[r.ID] = int32(i)
			continue
		}
		j, ok := int32(i), true
		if !same {
			p.byID[r.ID] = int32(i)
			j, ok = b.byID[r.ID]
		}
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
	if !slices.Equal(t.need, p.need) {
		t.need = p.need
		t.relayout()
	}
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

// Changed reports whether the row was changed by one of the last two refreshes.
func (t *Table) Changed(id string) bool {
	i, ok := t.byID[id]
	return ok && t.isChanged(i)
}

func (t *Table) isChanged(i int32) bool {
	c := t.changed[i]
	return c != 0 && t.gen-c < 2
}
