// The console's containers as compact rows (Rows), and the attached
// console's copy of them, kept current in place by the changes the daemon
// sends (GET /v1/containers?changed_since, docs/design.md §7.2).

package backend

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"dispatch-tui/engine/view"
)

// Rows is a snapshot's containers as compact rows, in submission order.
// A remote backend keeps one and applies each refresh's changes to it in
// place (no second copy); read it only through its methods, which are
// safe while it changes.
type Rows struct {
	mu   sync.RWMutex
	rows []Row
	at   map[string]int32 // index of each id in rows
	line []place          // numberLine's scratch, kept between refreshes
	// ver counts the refreshes that changed a row; each row says at
	// which it last changed (Row.Ver), so that the console rebuilds the
	// table rows of those alone.
	ver uint32
}

// NewRows makes the rows of cs (a backend that reads whole lists, such as
// the in-process one), in the order given.
func NewRows(cs []view.Container) *Rows {
	var in Interner
	s := &Rows{rows: make([]Row, len(cs)), at: make(map[string]int32, len(cs))}
	for i := range cs {
		s.rows[i] = RowOf(&cs[i], &in)
		s.at[cs[i].ID] = int32(i)
	}
	return s
}

// Len is how many containers there are.
func (s *Rows) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.rows)
}

// Get returns the row of id.
func (s *Rows) Get(id string) (Row, bool) {
	if s == nil {
		return Row{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.at[id]
	if !ok {
		return Row{}, false
	}
	return s.rows[i], true
}

// Each calls f with every row in order, read-locked (f must not keep r
// nor call s), and returns the version the rows were at: a row whose Ver
// is at most that has not changed since.
func (s *Rows) Each(f func(r *Row)) (ver uint32) {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range s.rows {
		f(&s.rows[i])
	}
	return s.ver
}

// upsert puts r in (replacing the row of its id) and reports whether it
// was new (s.mu held, or s not yet shared).
func (s *Rows) upsert(r Row) bool {
	if i, ok := s.at[r.ID]; ok {
		s.rows[i] = r
		return false
	}
	s.at[r.ID] = int32(len(s.rows))
	s.rows = append(s.rows, r)
	return true
}

// removeAll takes the rows of gone out, keeping the others' order, in
// one pass; it reports whether one of them held a place in the line
// (s.mu held).
func (s *Rows) removeAll(gone map[string]bool) (line bool) {
	k := 0
	for i := range s.rows {
		r := &s.rows[i]
		if gone[r.ID] {
			line = line || inLine(r)
			delete(s.at, r.ID)
			continue
		}
		if k != i {
			s.rows[k] = *r
			s.at[r.ID] = int32(k)
		}
		k++
	}
	clear(s.rows[k:]) // drop the strings of the rows past the end
	s.rows = s.rows[:k]
	return line
}

// reindex rebuilds the index by id (s.mu held).
func (s *Rows) reindex() {
	clear(s.at)
	for i := range s.rows {
		s.at[s.rows[i].ID] = int32(i)
	}
}

// rowCopy is a Remote's copy of the daemon's containers: read whole once
// (changed_since=0, a page at a time), then only what changed, applied to
// the same Rows in place.
type rowCopy struct {
	fetch sync.Mutex // one reader of changes at a time; guards the rest but the counters
	rows  *Rows      // nil before the first read
	gen   uint64     // the generation rows are current at; 0 before the first read
	strs  Interner   // shares the rows' repeated strings
	// loaded and total are the progress of a read of every container (0
	// of 0 outside one), read by the console while it waits.
	loaded, total atomic.Int64
}

// Progress reports how far a read of every container has got: loaded of
// total, both 0 when none is under way.
func (r *Remote) Progress() (loaded, total int) {
	return int(r.copy.loaded.Load()), int(r.copy.total.Load())
}

// containers returns the current containers: all of them read again when
// there is no copy yet or the daemon no longer knows its generation (410),
// else the copy with the changes since applied.
func (r *Remote) containers(ctx context.Context) (*Rows, error) {
	rc := &r.copy
	rc.fetch.Lock()
	defer rc.fetch.Unlock()
	if rc.gen != 0 {
		err := r.applyChanges(ctx)
		if view.KindOf(err) != view.KindGone {
			if err != nil {
				return nil, err
			}
			return rc.rows, nil
		}
		// The daemon restarted, or this console fell too far behind.
	}
	return r.readAll(ctx)
}

// readAll reads every container, page by page, into new rows (the last
// ones stay as they are for the snapshots that hold them), with the
// changes that land meanwhile applied as they come (rc.fetch held).
func (r *Remote) readAll(ctx context.Context) (*Rows, error) {
	rc := &r.copy
	defer rc.loaded.Store(0)
	defer rc.total.Store(0)
	var s *Rows
	var gen uint64
	for {
		ch, err := r.c.ContainerChanges(ctx, gen, r.pageSize, 0)
		if err != nil {
			return nil, err
		}
		if s == nil {
			s = &Rows{rows: make([]Row, 0, ch.Available), at: make(map[string]int32, ch.Available)}
		}
		if len(ch.Removed) > 0 {
			gone := make(map[string]bool, len(ch.Removed))
			for _, id := range ch.Removed {
				gone[id] = true
			}
			s.removeAll(gone)
		}
		for i := range ch.Items {
			s.upsert(RowOf(&ch.Items[i], &rc.strs))
		}
		gen = ch.Generation
		rc.loaded.Store(int64(len(s.rows)))
		rc.total.Store(int64(max(ch.Available, len(s.rows))))
		if !ch.More {
			break
		}
	}
	if sortBySeq(s.rows) {
		s.reindex()
	}
	s.numberLine()
	rc.rows, rc.gen = s, gen
	return s, nil
}

// sortBySeq puts rows in submission order, the order a console shows
// before it is told to sort, moving each row once (the changes come in the
// order of their changes, mostly that order already); it reports whether
// it moved any.
func sortBySeq(rows []Row) bool {
	sorted := true
	for i := 1; i < len(rows) && sorted; i++ {
		sorted = rows[i-1].Seq <= rows[i].Seq
	}
	if sorted {
		return false
	}
	from := make([]int, len(rows)) // from[k]: the row that goes to k
	for i := range from {
		from[i] = i
	}
	slices.SortFunc(from, func(a, b int) int { return cmp.Compare(rows[a].Seq, rows[b].Seq) })
	// Follow each cycle of the permutation, holding one row aside.
	for k := range from {
		if from[k] == k {
			continue
		}
		held := rows[k]
		j := k
		for from[j] != k {
			next := from[j]
			rows[j] = rows[next]
			from[j] = j
			j = next
		}
		rows[j] = held
		from[j] = j
	}
	return true
}

// applyChanges reads what changed since the copy's generation and
// applies it to the copy's rows in place (rc.fetch held). The changes are
// read whole before any is applied: a failed read leaves the rows as the
// last snapshot showed them.
func (r *Remote) applyChanges(ctx context.Context) error {
	rc := &r.copy
	gen := rc.gen
	var changed []Row
	last := map[string]int{} // id → index in changed (the last of its changes)
	gone := map[string]bool{}
	for {
		ch, err := r.c.ContainerChanges(ctx, gen, r.pageSize, 0)
		if err != nil {
			return err
		}
		for _, id := range ch.Removed {
			gone[id] = true
			if k, ok := last[id]; ok {
				changed[k].ID = "" // dropped after it changed
				delete(last, id)
			}
		}
		for i := range ch.Items {
			c := &ch.Items[i]
			delete(gone, c.ID) // dropped, then its id used again
			if k, ok := last[c.ID]; ok {
				changed[k] = RowOf(c, &rc.strs)
			} else {
				last[c.ID] = len(changed)
				changed = append(changed, RowOf(c, &rc.strs))
			}
		}
		gen = ch.Generation
		if !ch.More {
			break
		}
	}
	rc.gen = gen
	rc.rows.apply(changed, gone)
	return nil
}

// apply puts the changed rows in place (a row whose ID is "" is skipped)
// and takes out the gone ones, new rows after the others in submission
// order, and numbers the line again if it moved.
func (s *Rows) apply(changed []Row, gone map[string]bool) {
	if len(changed) == 0 && len(gone) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ver++
	// The line is numbered again only if a container in it, before or
	// after, changed (most changes at a busy daemon are of running ones).
	line := len(gone) > 0 && s.removeAll(gone)
	var added []Row
	for i := range changed {
		c := &changed[i]
		if c.ID == "" {
			continue
		}
		c.Pos = 0 // numbered by numberLine, never by the daemon's text
		c.Ver = s.ver
		j, ok := s.at[c.ID]
		if !ok {
			added = append(added, *c)
			continue
		}
		line = line || inLine(&s.rows[j]) || inLine(c)
		s.rows[j] = *c
	}
	// New ones after the rest in submission order, as the first read
	// left them (a batch submitted elsewhere may land between others).
	slices.SortFunc(added, func(a, b Row) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range added {
		line = line || inLine(&added[i])
		s.upsert(added[i])
	}
	if line {
		s.numberLine()
	}
}

// place is a container's place in the line, for numberLine.
type place struct {
	locked bool
	prio   int32
	fs     int64
	seq    uint64
	i      int32
}

// numberLine gives every container waiting its turn ("position N") its
// number: the daemon leaves the numbers out of its changes, as every pass
// at quota moves them all. A container holds a place in the line while it
// waits (Queued or Locked), is not held and has a priority above 0 — as
// the scheduler counts it (engine/scheduler) — in the scheduling order:
// Locked before Queued, priority descending, first seen, submission
// (s.mu held, or s not yet shared).
func (s *Rows) numberLine() {
	line := s.line[:0]
	for i := range s.rows {
		r := &s.rows[i]
		if inLine(r) {
			line = append(line, place{r.State == view.Locked, r.Priority, r.FirstSeenAt, r.Seq, int32(i)})
		} else if r.Pos != 0 {
			r.Pos, r.Ver = 0, s.ver
		}
	}
	slices.SortFunc(line, func(a, b place) int {
		if a.locked != b.locked {
			if a.locked {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		if c := cmp.Compare(a.fs, b.fs); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for n, p := range line {
		r := &s.rows[p.i]
		pos := int32(n + 1)
		if r.ReasonCode != view.ReasonPosition {
			pos = 0 // holds a place, shows another reason
		}
		if r.Pos != pos {
			r.Pos, r.Ver = pos, s.ver
		}
	}
	s.line = line
}

// inLine reports whether r holds a place in the line (numberLine).
func inLine(r *Row) bool {
	return (r.State == view.Queued || r.State == view.Locked) && !r.Held && r.Priority > 0
}

// errNoCopy is the watch's error before the copy's first read.
var errNoCopy = errors.New("no copy of the containers yet")

// watchFrom is the generation the watch starts from: the copy's, once
// there is one.
func (r *Remote) watchFrom() (uint64, error) {
	r.copy.fetch.Lock()
	defer r.copy.fetch.Unlock()
	if r.copy.gen == 0 {
		return 0, errNoCopy
	}
	return r.copy.gen, nil
}
