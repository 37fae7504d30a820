// The attached console's copy of the containers, kept current by the
// changes the daemon sends (GET /v1/containers?changed_since, docs/design.md §7.2).

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

// rowCopy is a Remote's copy of the daemon's containers: read whole once
// (changed_since=0, a page at a time), then only what changed. A slice
// handed out in a snapshot is never changed again (snapshots are
// immutable): a refresh with changes builds the next slice from it, which
// shares each unchanged container's maps and slices with it; a refresh
// without any returns the same slice.
type rowCopy struct {
	mu   sync.Mutex // one reader of changes at a time
	rows []view.Container
	at   map[string]int // index of each id in rows
	gen  uint64         // the generation rows are current at; 0 before the first read
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
func (r *Remote) containers(ctx context.Context) ([]view.Container, error) {
	rc := &r.copy
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.gen != 0 {
		rows, err := r.applyChanges(ctx)
		if view.KindOf(err) != view.KindGone {
			return rows, err
		}
		// The daemon restarted, or this console fell too far behind.
	}
	return r.readAll(ctx)
}

// readAll reads every container, page by page, with the changes that land
// meanwhile applied as they come (rc.mu held).
func (r *Remote) readAll(ctx context.Context) ([]view.Container, error) {
	rc := &r.copy
	defer rc.loaded.Store(0)
	defer rc.total.Store(0)
	var rows []view.Container
	at := map[string]int{}
	var gen uint64
	for {
		ch, err := r.c.ContainerChanges(ctx, gen, r.pageSize, 0)
		if err != nil {
			return nil, err
		}
		if rows == nil {
			rows = make([]view.Container, 0, ch.Available)
			at = make(map[string]int, ch.Available)
		}
		for _, id := range ch.Removed {
			if i, ok := at[id]; ok {
				rows = removeRow(rows, at, i)
			}
		}
		for _, c := range ch.Items {
			if i, ok := at[c.ID]; ok {
				rows[i] = c
			} else {
				at[c.ID] = len(rows)
				rows = append(rows, c)
			}
		}
		gen = ch.Generation
		rc.loaded.Store(int64(len(rows)))
		rc.total.Store(int64(max(ch.Available, len(rows))))
		if !ch.More {
			break
		}
	}
	if sortBySeq(rows) {
		clear(at)
		for i := range rows {
			at[rows[i].ID] = i
		}
	}
	numberLine(rows)
	rc.rows, rc.at, rc.gen = rows, at, gen
	return rows, nil
}

// sortBySeq puts rows in submission order, the order a console shows
// before it is told to sort, moving each row once (the changes come in the
// order of their changes, mostly that order already); it reports whether
// it moved any.
func sortBySeq(rows []view.Container) bool {
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

// removeRow takes rows[i] out by moving the last row into its place.
func removeRow(rows []view.Container, at map[string]int, i int) []view.Container {
	delete(at, rows[i].ID)
	last := len(rows) - 1
	if i != last {
		rows[i] = rows[last]
		at[rows[i].ID] = i
	}
	rows[last] = view.Container{}
	return rows[:last]
}

// applyChanges reads what changed since the copy's generation and, if
// anything did, builds the next slice from the copy (rc.mu held).
func (r *Remote) applyChanges(ctx context.Context) ([]view.Container, error) {
	rc := &r.copy
	gen := rc.gen
	var items []view.Container
	changed := map[string]int{} // id → index in items (the last of its changes)
	removed := map[string]bool{}
	for {
		ch, err := r.c.ContainerChanges(ctx, gen, r.pageSize, 0)
		if err != nil {
			return nil, err
		}
		for _, id := range ch.Removed {
			removed[id] = true
			if k, ok := changed[id]; ok {
				items[k].ID = "" // dropped after it changed
				delete(changed, id)
			}
		}
		for _, c := range ch.Items {
			if k, ok := changed[c.ID]; ok {
				items[k] = c
			} else {
				changed[c.ID] = len(items)
				items = append(items, c)
			}
		}
		gen = ch.Generation
		if !ch.More {
			break
		}
	}
	if len(changed) == 0 && len(removed) == 0 {
		rc.gen = gen
		return rc.rows, nil
	}
	// The next slice: a copy of the last with the changes in place. The
	// index by id is the copy's own (no snapshot holds it): it is kept and
	// only the rows after the first removed one are renumbered.
	rows := make([]view.Container, 0, len(rc.rows)+len(changed))
	at := rc.at
	shifted := false
	// The line is numbered again only if a container in it, before or
	// after, changed (most changes at a busy daemon are of running ones).
	line := false
	for i := range rc.rows {
		id := rc.rows[i].ID
		if k, ok := changed[id]; ok {
			line = line || inLine(&rc.rows[i]) || inLine(&items[k])
			rows = append(rows, items[k])
			delete(changed, id)
		} else if removed[id] {
			line = line || inLine(&rc.rows[i])
			delete(at, id)
			shifted = true
			continue
		} else {
			rows = append(rows, rc.rows[i])
		}
		if shifted {
			at[id] = len(rows) - 1
		}
	}
	var added []view.Container
	for _, c := range items {
		if _, ok := changed[c.ID]; ok && c.ID != "" {
			added = append(added, c)
		}
	}
	// New ones after the rest in submission order, as the first read
	// left them (a batch submitted elsewhere may land between others).
	slices.SortFunc(added, func(a, b view.Container) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, c := range added {
		line = line || inLine(&c)
		at[c.ID] = len(rows)
		rows = append(rows, c)
	}
	if line {
		numberLine(rows)
	}
	rc.rows, rc.at, rc.gen = rows, at, gen
	return rows, nil
}

// numberLine gives every container waiting its turn ("position N") its
// number: the daemon leaves the numbers out of its changes, as every pass
// at quota moves them all. A container holds a place in the line while it
// waits (Queued or Locked), is not held and has a priority above 0 — as
// the scheduler counts it (engine/scheduler) — in the scheduling order:
// Locked before Queued, priority descending, first seen, submission.
func numberLine(rows []view.Container) {
	type place struct {
		locked bool
		prio   int
		fs     int64
		seq    uint64
		i      int
	}
	var line []place
	for i := range rows {
		c := &rows[i]
		if inLine(c) {
			line = append(line, place{c.State == view.Locked, c.Priority, c.FirstSeenAt.UnixNano(), c.Seq, i})
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
		if c := &rows[p.i]; c.ReasonCode == view.ReasonPosition {
			c.Reason = view.Pending{Code: view.ReasonPosition, N: n + 1}.Text()
		}
	}
}

// inLine reports whether c holds a place in the line (numberLine).
func inLine(c *view.Container) bool {
	return (c.State == view.Queued || c.State == view.Locked) && !c.Held && c.Priority > 0
}

// errNoCopy is the watch's error before the copy's first read.
var errNoCopy = errors.New("no copy of the containers yet")

// watchFrom is the generation the watch starts from: the copy's, once
// there is one.
func (r *Remote) watchFrom() (uint64, error) {
	r.copy.mu.Lock()
	defer r.copy.mu.Unlock()
	if r.copy.gen == 0 {
		return 0, errNoCopy
	}
	return r.copy.gen, nil
}
