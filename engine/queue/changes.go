// The change log: which containers changed or left since a generation, so a
// reader (an attached console) fetches only those (docs/design.md §7.2, §9.1).

package queue

import (
	"cmp"
	"context"
	"slices"

	"dispatch-tui/engine/view"
)

// Every change a reader of a container could see — its record, its pending
// reason other than the number of a position, a submit — gives the queue a
// new generation (q.gen) and appends (generation, container) to q.changes,
// which is therefore in generation order. A container changed twice (not
// in a row) is in the log twice until the log is compacted (each live
// container's last entry kept), so the log holds at most about two entries
// per container.
//
// A dropped container (keep_finished) leaves a tombstone (generation, id)
// in q.tombs; only the newest Options.Tombstones are kept, and a reader whose
// generation is older than the newest one forgotten (q.tombFloor) must read
// everything again (ErrReload).
//
// A position's number is left out on purpose: at quota every pass moves
// the number of every container behind a start, and the log would carry
// the whole queue each pass. A reader numbers the line itself from the
// order, which the records it has say (view.Container's order fields).

// change is one entry of the log.
type change struct {
	gen uint64
	c   *Container
}

// tombstone is a container dropped at generation gen.
type tombstone struct {
	gen uint64
	id  string
}

// DefaultTombstones is how many dropped containers' ids the queue
// remembers for readers of changes (Options.Tombstones): a reader further
// behind reads everything again. Drops go a flush's worth at a time, so
// this is many flushes.
const DefaultTombstones = 1 << 17

// ErrReload answers a read of changes since a generation this queue cannot
// answer from (older than the tombstones it keeps, or from another run of
// the dispatcher): the reader must read every container again.
var ErrReload = view.NewError(view.KindGone, "changes since that generation are no longer kept: read all containers again (changed_since=0)")

// changedLocked records that c changed in a way readers see.
func (q *Queue) changedLocked(c *Container) {
	q.gen++
	q.logged = q.gen
	// A container changed twice in a row (a start locks then runs it) is
	// logged once, at its newest generation: the log stays in generation
	// order and a reader since either generation still reads it.
	if n := len(q.changes); n > 0 && q.changes[n-1].c == c {
		q.changes[n-1].gen = q.gen
		return
	}
	q.changes = append(q.changes, change{q.gen, c})
	if len(q.changes) > 2*q.byID.len()+4096 {
		q.compactChangesLocked()
	}
}

// compactChangesLocked keeps each live container's last entry only, in
// place: it runs inside a pass, under the queue's lock, so it allocates
// nothing and marks the records it has kept (hintLogged) rather than
// building a set of them; a dropped one is known by its hintDropped.
func (q *Queue) compactChangesLocked() {
	log := q.changes
	// Newest first, kept entries written from the end backwards: the
	// write index never falls below the read index.
	w := len(log)
	for i := len(log) - 1; i >= 0; i-- {
		c := log[i].c
		if c.hints&(hintLogged|hintDropped) != 0 {
			continue
		}
		c.hints |= hintLogged
		w--
		log[w] = log[i]
	}
	n := copy(log, log[w:])
	for _, ch := range log[:n] {
		ch.c.hints &^= hintLogged
	}
	clear(log[n:]) // no pointers to dropped records left in the spare capacity
	q.changes = log[:n]
}

// droppedLocked records tombstones for containers that left byID, and
// marks them dropped (hintDropped) for the log's readers: their entries
// stay in the log until it is compacted (undropLocked clears the mark).
func (q *Queue) droppedLocked(cs []*Container) {
	q.gen++
	q.logged = q.gen
	for _, c := range cs {
		q.tombs = append(q.tombs, tombstone{q.gen, c.ID})
		c.hints |= hintDropped
	}
	if over := len(q.tombs) - q.opts.Tombstones; over > 0 {
		// Forget the oldest half at once, not one per drop.
		n := max(over, q.opts.Tombstones/2)
		q.tombFloor = q.tombs[n-1].gen
		q.tombs = slices.Delete(q.tombs, 0, n)
	}
}

// Changes is one page of what changed since a generation.
type Changes struct {
	// Items are the containers that changed (their current views), each
	// once, in the order of their changes.
	Items []view.Container
	// Removed are the ids of containers dropped since (apply them before
	// Items: a container may be dropped and put back).
	Removed []string
	// Generation is where this page ends: pass it as since for the next
	// page (More) or the next read.
	Generation uint64
	// More is set when the page was cut at limit: read on from Generation
	// at once.
	More bool
	// Latest is the queue's generation now (Generation unless More): a
	// watcher that only wants to know of a change goes on from it.
	Latest uint64
	// Total is how many containers there are now.
	Total int
}

// ChangesSince returns up to limit containers that changed after
// generation since, and the ids of those dropped; since 0 reads every
// container (a first read, paged like any other). It fails with ErrReload
// when since is older than the tombstones kept or newer than this queue's
// generation (a reader from another run of the dispatcher). Its Items
// share the records' maps and command (ChangesEach): read them only.
func (q *Queue) ChangesSince(since uint64, limit int) (Changes, error) {
	var items []view.Container
	out, err := q.ChangesEach(since, limit, func(vs []view.Container) { items = append(items, vs...) })
	if err != nil {
		return Changes{}, err
	}
	if items == nil {
		items = []view.Container{}
	}
	out.Items = items
	return out, nil
}

// ChangesEach is ChangesSince handing the page's views to each a chunk at
// a time, outside the queue's lock, instead of in Items (left nil); it
// calls each only once the page, Removed and the generations are known
// and not at all on an error. The views share the records' maps, command
// and preemptible flag (sharedView) and the chunk is reused: each encodes
// or copies them and keeps neither. A page of 10,000 views made whole for
// each watching console, then copied again to add their costs, was most
// of the churn's garbage (BENCHMARKS.md, helper garbage); the chunk and
// the look-ups of pending reasons are now kept for the next read
// (viewScratches).
func (q *Queue) ChangesEach(since uint64, limit int, each func([]view.Container)) (Changes, error) {
	if limit <= 0 {
		limit = 1000
	}
	q.mu.Lock()
	if since != 0 && (since < q.tombFloor || since > q.gen) {
		q.mu.Unlock()
		return Changes{}, ErrReload
	}
	if since == 0 && len(q.changes) > q.byID.len() {
		// A first read pages through the whole log: a container in it
		// twice (logged at load, then by the first pass's new reason)
		// would be sent twice, a million extra at a million. Each
		// live container's last entry is all a reader from any
		// generation needs.
		q.compactChangesLocked()
	}
	out := Changes{Generation: q.gen, Latest: q.gen, Total: q.byID.len()}
	i, _ := slices.BinarySearchFunc(q.changes, since+1, func(ch change, g uint64) int { return cmp.Compare(ch.gen, g) })
	// A container already on the page is marked (hintLogged), not put in
	// a set: a page is up to 10,000 and every watching console reads
	// every change (BENCHMARKS.md, helper churn).
	page := make([]*Container, 0, min(limit, len(q.changes)-i))
	for _, ch := range q.changes[i:] {
		if ch.c.hints&(hintLogged|hintDropped) == 0 { // not on the page, not dropped since (a tombstone says so)
			if len(page) == limit {
				out.More = true
				break
			}
			ch.c.hints |= hintLogged
			page = append(page, ch.c)
		}
		// The page covers the log up to here.
		out.Generation = ch.gen
	}
	for _, c := range page {
		c.hints &^= hintLogged
	}
	if !out.More {
		out.Generation = q.gen
	}
	if since != 0 {
		j, _ := slices.BinarySearchFunc(q.tombs, since+1, func(t tombstone, g uint64) int { return cmp.Compare(t.gen, g) })
		for _, t := range q.tombs[j:] {
			if t.gen > out.Generation {
				break
			}
			out.Removed = append(out.Removed, t.id)
		}
	}
	// The views are made viewChunk at a time, the lock let go between:
	// a page is up to 10,000 views, which a submit, a pass or a bulk verb
	// waited behind, for each watching console (BENCHMARKS.md, helper
	// churn). A container that changes meanwhile is shown as it is then,
	// which a reader from out.Generation reads again anyway.
	// The chunk is not cleared after use: the next read overwrites it, and
	// the pool lets go of what it holds within two collections.
	sc := viewScratches.Get().(*viewScratch)
	defer viewScratches.Put(sc)
	for i := 0; ; {
		j := min(len(page), i+viewChunk)
		vs := slices.Grow(sc.views[:0], j-i)[:j-i]
		sc.views = vs
		q.eachViewLocked(page[i:j], sc, func(k int, c *Container, p Pending) { vs[k] = c.sharedView(p) })
		q.mu.Unlock()
		if len(vs) > 0 {
			each(vs)
		}
		if i = j; i == len(page) {
			return out, nil
		}
		q.mu.Lock()
	}
}

// viewChunk is how many views a read of changes makes under one hold of
// the queue's lock.
const viewChunk = 1000

// WaitChanges returns once a container changed or was dropped after
// generation since (at once if one already was), or when ctx ends; a
// pass that only renumbers positions does not count. It reports whether
// there are changes.
func (q *Queue) WaitChanges(ctx context.Context, since uint64) bool {
	ch, stop := q.Subscribe()
	defer stop()
	for {
		q.mu.Lock()
		// since > q.gen: a reader from another run; ChangesSince tells it.
		changed := q.logged > since || since > q.gen || since < q.tombFloor
		q.mu.Unlock()
		if changed {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case _, ok := <-ch:
			if !ok {
				return false // the queue closed
			}
		}
	}
}

// startChangesLocked starts the generations of a newly loaded queue after
// the clock's reading in nanoseconds, so that a reader's generation from an
// earlier run of the dispatcher is below every one of this run's tombstone
// floor (or above its generation) and it reads everything again; it logs
// every loaded container, so that reading changes since 0 reads them all.
func (q *Queue) startChangesLocked() {
	q.gen = max(q.gen, uint64(max(q.clock.Now().UnixNano(), 1)))
	q.tombFloor = q.gen
	for _, c := range q.bySeq {
		q.changedLocked(c)
	}
}
