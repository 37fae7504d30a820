// Refreshes: replacing the rows (SetRows, or Base/Prepare off the UI
// goroutine then SetPrepared, or a Source kept by its owner), which rows
// changed, and the cursor state a refresh keeps for relocate.

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
	t.install(t.Base().Prepare(rows).src)
}

// SetSource makes src the table's rows (one refresh): the same source
// again is a refresh of the rows its owner changed in place. Rows are
// flagged as changed by their Ver.
func (t *Table) SetSource(src Source) { t.install(src) }

// Base is what Prepare compares new rows with: the table's rows at one
// moment. Take it on the goroutine that owns the table; Prepare may then
// run on any goroutine (rows given to SetRows are never changed).
type Base struct {
	cols []Column
	prev *sliceSource // nil: the table's rows are not a slice
	// gen is the table's install count when taken.
	gen uint64
}

// Base returns the table's current data for Prepare.
func (t *Table) Base() Base {
	prev, _ := t.src.(*sliceSource)
	return Base{cols: t.cols, prev: prev, gen: t.installs}
}

// Row returns the base's row of id: a refresh may hand it to Prepare
// again when its data did not change (a row's slices are never changed).
func (b Base) Row(id string) (Row, bool) {
	if b.prev == nil {
		return Row{}, false
	}
	i, ok := b.prev.byID[id]
	if !ok {
		return Row{}, false
	}
	return b.prev.rows[i], true
}

// Prepared is a refresh computed by Prepare, for SetPrepared.
type Prepared struct {
	gen uint64 // the Base's
	src *sliceSource
}

// Prepare computes what SetRows(rows) would do to a table in state b: the
// index by id and which rows changed. For 100,000 rows that is tens of
// milliseconds, better spent off the UI goroutine.
func (b Base) Prepare(rows []Row) *Prepared {
	p := b.prev
	if p == nil {
		p = emptySource.(*sliceSource)
	}
	first := b.gen == 0 && len(p.rows) == 0
	s := &sliceSource{rows: rows, byID: p.byID, ver: make([]uint32, len(rows)), version: p.version + 1}
	// The same ids in the same order (a refresh that only changed rows)
	// keep the index by id: it is never changed, only replaced.
	same := !first && len(rows) == len(p.rows)
	for i := 0; same && i < len(rows); i++ {
		same = rows[i].ID == p.rows[i].ID
	}
	if !same {
		s.byID = make(map[string]int32, len(rows))
	}
	s.need = make([]int, len(b.cols))
	for c, col := range b.cols {
		if col.MaxWidth > col.Width {
			for i := range rows {
				if w := cellWidth(rows[i].Cells[c]); w > s.need[c] {
					s.need[c] = min(w, col.MaxWidth)
				}
			}
		}
	}
	for i := range rows {
		r := &rows[i]
		if first {
			s.byID[r.ID] = int32(i)
			continue
		}
		j, ok := int32(i), true
		if !same {
			s.byID[r.ID] = int32(i)
			j, ok = p.byID[r.ID]
		}
		switch {
		case !ok:
			s.ver[i] = s.version
		case !sameContent(b.cols, p.rows[j].Cells, r.Cells) || p.rows[j].State != r.State:
			s.ver[i] = s.version
		default:
			s.ver[i] = p.ver[j]
		}
	}
	return &Prepared{gen: b.gen, src: s}
}

// SetPrepared installs a Prepare result, or, when the table was refreshed
// since its Base was taken, sets its rows the slow way.
func (t *Table) SetPrepared(p *Prepared) {
	if p.gen != t.installs {
		t.SetRows(p.src.rows)
		return
	}
	t.install(p.src)
}

func (t *Table) install(src Source) {
	same := src == t.src
	var v uint32
	var slots int
	src.Read(func(rd Reader) { v, slots = rd.Version(), rd.Len() })
	t.installs++
	if t.installs == 1 {
		t.vers = [3]uint32{v, v, v} // the first rows are not "changed"
	} else {
		t.vers = [3]uint32{t.vers[1], t.vers[2], v}
	}
	if same && t.installs > 1 && v == t.vers[1] && slots == t.slots {
		// Not changed since the last refresh: the order, the view and
		// a job under way stand.
		return
	}
	if t.pend {
		// The job's result was computed from the rows before: drop it
		// (and stop the job); ensure computes from these.
		t.supersede()
	}
	if t.reorder == nil && !t.dirtySort && !t.dirtyView && t.cursorPos < len(t.view) {
		// The ids shown above the cursor before the refresh, and what
		// tells the rows that were there then.
		r := &refreshed{pos: t.cursorPos, old: t.src, oldLen: t.slots, same: same, above: make([]string, t.cursorPos)}
		t.src.Read(func(rd Reader) {
			for k, i := range t.view[:t.cursorPos] {
				r.above[k] = rd.ID(int(i))
			}
		})
		t.reorder = r
	}
	t.src = src
	need := make([]int, len(t.cols))
	src.Read(func(rd Reader) {
		t.slots, t.nLive = rd.Len(), rd.Live()
		for c, col := range t.cols {
			if col.MaxWidth > col.Width {
				need[c] = min(rd.Need(c), col.MaxWidth)
			}
		}
		for id := range t.marks {
			if _, ok := rd.Index(id); !ok {
				delete(t.marks, id)
			}
		}
	})
	if !slices.Equal(t.need, need) {
		t.need = need
		t.relayout()
	}
	if len(t.cache) > 4*max(t.height, 64) {
		clear(t.cache)
	}
	t.dirtySort = true
	// The order computed before indexes the same rows when the source
	// is the same: it stays shown while a job computes the next one.
	t.rowsNew = !same
}

// Changed reports whether the row was changed by one of the last two refreshes.
func (t *Table) Changed(id string) bool {
	ch := false
	t.src.Read(func(rd Reader) {
		i, ok := rd.Index(id)
		ch = ok && t.isChanged(rd, i)
	})
	return ch
}

func (t *Table) isChanged(rd Reader, i int) bool {
	return rd.Ver(i) > t.vers[0]
}
