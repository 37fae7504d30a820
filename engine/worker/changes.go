// The pool's change log: which instances changed since a generation, for
// readers that keep a copy of them (an attached console, docs/design.md
// §7.2). The pool owns it like the rest of its state, behind p.mu.

package worker

import (
	"cmp"
	"context"
	"slices"

	"dispatch-tui/engine/view"
)

// DefaultTombstones is how many removed instances' ids the log remembers
// for readers of changes; a reader further behind reads every instance
// again.
const DefaultTombstones = 4096

// ErrReload answers a read of changes since a generation the pool cannot
// answer from (older than the removals it remembers, or of another run of
// the dispatcher): the reader must read every instance again.
var ErrReload = view.NewError(view.KindGone, "changes since that generation are no longer kept: read all instances again (changed_since=0)")

// CreatingID stands, in Changes.Removed, for the creates in flight: their
// rows have no id yet, so they always come whole. A reader drops every row
// without an id, then adds the Items without one.
const CreatingID = ""

// Changes is one page of what changed since a generation.
type Changes struct {
	// Items are the instances that changed, each once, in the order of
	// their changes: the pool's, the hosts the driver refuses, other
	// dispatchers' and, with an empty ID, the creates in flight.
	Items []view.Instance
	// Removed are the ids of instances gone since (CreatingID: the
	// creates in flight, all of them); apply them before Items.
	Removed []string
	// Generation is where this page ends: pass it as since for the next
	// page (More) or the next read.
	Generation uint64
	// More is set when the page was cut at limit: read on from
	// Generation at once.
	More bool
	// Latest is the log's generation now (Generation unless More).
	Latest uint64
	// Total is how many instance rows there are now.
	Total int
}

// published is an instance as readers of changes were last shown it.
type published struct {
	v   view.Instance // its Containers are the log's own copy
	gen uint64        // when it last changed
}

type tombstone struct {
	gen uint64
	id  view.InstanceID
}

// logEntry is a changed row in a read (r nil: the creates in flight).
type logEntry struct {
	gen uint64
	r   *published
}

// changeLog is what readers of changes were shown, and when each row last
// changed. It starts with the first reader: a pool nobody reads changes
// from keeps none. Rows are marked where they change (rowChanged), and a
// settle looks at the marked ones only, so a step with nothing changed
// costs nothing however many instances there are.
type changeLog struct {
	on    bool
	gen   uint64
	floor uint64 // a since below it is answered ErrReload
	rows  map[view.InstanceID]*published
	// marked are the pool's instances changed, added or removed since
	// the last settle, each once (instance.marked).
	marked []*instance
	// others are the ids shown from the refused hosts and other
	// dispatchers' instances; othersChanged: a listing may have changed
	// them. creatingChanged: a create started or ended.
	others          map[view.InstanceID]bool
	othersSpare     map[view.InstanceID]bool
	othersChanged   bool
	creatingChanged bool
	creating        []view.Instance
	creatingGen     uint64
	tombs           []tombstone // in generation order
	// looked counts the rows settles looked at (tests and benchmarks).
	looked uint64
	// waiters are the WaitChanges calls waiting; wake (closed when the
	// generation moves) tells them.
	waiters int
	wake    chan struct{}
	scratch []logEntry
	// onSettle, if set (by tests, before the first reader), runs at the
	// end of every settle with p.mu held.
	onSettle func()
}

// startChangesLocked starts the log at the clock's reading in
// nanoseconds, so that a generation a reader kept from an earlier run of
// the dispatcher is below this run's floor (p.mu held). Every row is new
// to it: all are marked.
func (p *Pool) startChangesLocked() {
	cl := &p.changes
	if cl.on {
		return
	}
	cl.on = true
	cl.gen = uint64(max(p.clk.Now().UnixNano(), 1))
	cl.floor = cl.gen
	cl.rows = make(map[view.InstanceID]*published, len(p.list))
	cl.others = map[view.InstanceID]bool{}
	cl.othersSpare = map[view.InstanceID]bool{}
	for _, w := range p.list {
		w.rowChanged()
	}
	cl.othersChanged, cl.creatingChanged = true, true
}

// rowChanged marks w's row for the change log's next settle. Every write
// to a field of w.v.Instance that sameInstance compares calls it, as do
// w's addition and removal (p.mu held); a write that misses it is found
// by the pool's tests, which check the log against the rows at every
// settle.
func (w *instance) rowChanged() {
	w.viewChanged()
	cl := &w.pool.changes
	if !cl.on || w.marked {
		return
	}
	w.marked = true
	cl.marked = append(cl.marked, w)
}

// othersChangedLocked: a listing ended, which may have changed the rows
// of refused hosts and other dispatchers' instances (p.mu held).
func (p *Pool) othersChangedLocked() { p.changes.othersChanged = true }

// creatingChangedLocked: a create started or ended (p.mu held).
func (p *Pool) creatingChangedLocked() {
	p.changes.creatingChanged = true
	p.gen++ // Instances shows the creates in flight
}

// settleChangesLocked gives each marked row that differs from what
// readers were last shown a generation of its own, and each removed one a
// tombstone; the refused hosts and other dispatchers' instances are
// compared after a listing, the creates in flight after a create starts
// or ends. Its cost is the marked rows', not the pool's (p.mu held).
func (p *Pool) settleChangesLocked() {
	cl := &p.changes
	if !cl.on {
		return
	}
	before := cl.gen
	// Removals first: an id removed and added again in between gets its
	// tombstone before its new row.
	for _, w := range cl.marked {
		if !w.removed {
			continue
		}
		cl.looked++
		if p.isOtherLocked(w.v.ID) {
			cl.othersChanged = true // the pool's row hid another
		}
		if w.pub != nil && cl.rows[w.v.ID] == w.pub {
			delete(cl.rows, w.v.ID)
			cl.tomb(w.v.ID)
		}
		w.pub = nil
	}
	for i, w := range cl.marked {
		cl.marked[i] = nil
		w.marked = false
		if w.removed {
			continue
		}
		cl.looked++
		if w.pub == nil && p.isOtherLocked(w.v.ID) {
			cl.othersChanged = true // the pool's row now hides another
		}
		w.pub = cl.publish(&w.v.Instance)
	}
	cl.marked = cl.marked[:0]
	if cl.othersChanged {
		p.settleOthersLocked()
	}
	if cl.creatingChanged {
		cl.creatingChanged = false
		cl.looked += uint64(len(p.pending))
		if !slices.EqualFunc(cl.creating, p.pending, func(a view.Instance, b *pendingCreate) bool { return sameInstance(&a, &b.view.Instance) }) {
			cl.gen++
			cl.creatingGen = cl.gen
			cl.creating = cl.creating[:0]
			for _, pc := range p.pending {
				v := pc.view.Instance
				v.Containers = []string{}
				cl.creating = append(cl.creating, v)
			}
		}
	}
	if over := len(cl.tombs) - DefaultTombstones; over > 0 {
		// Forget the oldest half at once, not one per removal.
		n := max(over, DefaultTombstones/2)
		cl.floor = cl.tombs[n-1].gen
		cl.tombs = slices.Delete(cl.tombs, 0, n)
	}
	if cl.gen != before && cl.wake != nil {
		close(cl.wake)
		cl.wake = nil
	}
	if cl.onSettle != nil {
		cl.onSettle()
	}
}

// settleOthersLocked publishes the rows of the refused hosts and of other
// dispatchers' instances, and removes those gone; an id the pool holds
// shows the pool's row, and an id both refused and foreign the refused
// one (p.mu held).
func (p *Pool) settleOthersLocked() {
	cl := &p.changes
	cl.othersChanged = false
	now := cl.othersSpare
	add := func(views []InstanceView) {
		for i := range views {
			v := &views[i].Instance
			cl.looked++
			if p.byID[v.ID] != nil || now[v.ID] {
				continue
			}
			now[v.ID] = true
			cl.publish(v)
		}
	}
	if len(p.refusedHosts) > 0 {
		add(p.refusedViewsLocked())
	}
	if len(p.foreign) > 0 {
		add(p.foreignViewsLocked())
	}
	for id := range cl.others {
		if !now[id] && p.byID[id] == nil {
			delete(cl.rows, id)
			cl.tomb(id)
		}
	}
	clear(cl.others)
	cl.others, cl.othersSpare = now, cl.others
}

// isOtherLocked reports whether id is a refused host's or another
// dispatcher's instance, whose row the pool's own hides while it holds id.
func (p *Pool) isOtherLocked(id view.InstanceID) bool {
	_, refused := p.refused[id]
	_, foreign := p.foreign[id]
	return refused || foreign
}

// tomb records id's removal at a generation of its own.
func (cl *changeLog) tomb(id view.InstanceID) {
	cl.gen++
	cl.tombs = append(cl.tombs, tombstone{cl.gen, id})
}

// publish records v as readers see it, with a new generation if it
// differs from what they were last shown, and returns its record.
func (cl *changeLog) publish(v *view.Instance) *published {
	r := cl.rows[v.ID]
	switch {
	case r == nil:
		r = &published{}
		cl.rows[v.ID] = r
	case sameInstance(&r.v, v):
		return r
	}
	cl.gen++
	cs := append(r.v.Containers[:0], v.Containers...)
	r.v = *v
	r.v.Containers = cs
	r.gen = cl.gen
	return r
}

// sameInstance reports whether a and b show the same, but for the two
// times every probe moves (LastProbe, and LastBusy while containers run):
// were those changes, every instance would change every probe_interval
// and a quiet pool would never be quiet. A row carries them as they were
// when something else about it last changed.
func sameInstance(a, b *view.Instance) bool {
	return a.ID == b.ID && a.Type == b.Type && a.ProviderType == b.ProviderType &&
		a.Address == b.Address && a.Price == b.Price && a.State == b.State &&
		a.IdleBehavior == b.IdleBehavior && slices.Equal(a.Containers, b.Containers) &&
		a.LastContainer == b.LastContainer && a.AppearedAt.Equal(b.AppearedAt) &&
		a.LastError == b.LastError && a.ProbeFailing == b.ProbeFailing && a.Preempted == b.Preempted &&
		a.UnreachableSince.Equal(b.UnreachableSince) && a.ProbeError == b.ProbeError &&
		a.CreatedAt.Equal(b.CreatedAt)
}

// ChangesSince returns up to limit instance rows that changed after
// generation since, and the ids of those removed; since 0 reads every row
// (a first read, paged like any other). The creates in flight count as
// one change and are never split across pages. It fails with ErrReload
// when since is older than the removals remembered or newer than the
// log (a reader from another run of the dispatcher).
func (p *Pool) ChangesSince(since uint64, limit int) (Changes, error) {
	if limit <= 0 {
		limit = 1000
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.startChangesLocked()
	p.settleChangesLocked()
	cl := &p.changes
	if since != 0 && (since < cl.floor || since > cl.gen) {
		return Changes{}, ErrReload
	}
	out := Changes{Generation: cl.gen, Latest: cl.gen, Total: len(cl.rows) + len(cl.creating)}
	if since == cl.gen {
		return out, nil // nothing since: an idle reader's read
	}
	ents := cl.scratch[:0]
	for _, r := range cl.rows {
		if r.gen > since {
			ents = append(ents, logEntry{r.gen, r})
		}
	}
	if cl.creatingGen > since {
		ents = append(ents, logEntry{gen: cl.creatingGen})
	}
	slices.SortFunc(ents, func(a, b logEntry) int { return cmp.Compare(a.gen, b.gen) })
	creates := false
	for i, e := range ents {
		size := 1
		if e.r == nil {
			size = len(cl.creating)
		}
		if len(out.Items) > 0 && len(out.Items)+size > limit {
			out.More = true
			out.Generation = ents[i-1].gen
			break
		}
		if e.r == nil {
			creates = true
			for _, v := range cl.creating {
				v.Containers = []string{}
				out.Items = append(out.Items, v)
			}
			continue
		}
		v := e.r.v
		v.Containers = slices.Clone(v.Containers)
		if v.Containers == nil {
			v.Containers = []string{}
		}
		out.Items = append(out.Items, v)
	}
	clear(ents)
	cl.scratch = ents[:0]
	if since == 0 {
		return out, nil // a first read: nothing to remove
	}
	if creates {
		out.Removed = append(out.Removed, CreatingID)
	}
	j, _ := slices.BinarySearchFunc(cl.tombs, since+1, func(t tombstone, g uint64) int { return cmp.Compare(t.gen, g) })
	for _, t := range cl.tombs[j:] {
		if t.gen > out.Generation {
			break
		}
		out.Removed = append(out.Removed, string(t.id))
	}
	return out, nil
}

// WaitChanges returns once an instance row changed after generation since
// (at once if one has), or ctx ended, or the pool stopped; it reports
// whether there are changes. A change is found by the next Step (the
// engine steps on every change the pool signals and at least once a
// pass interval), or by a read.
func (p *Pool) WaitChanges(ctx context.Context, since uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.startChangesLocked()
	p.settleChangesLocked()
	cl := &p.changes
	for {
		// A since above the generation is a reader from another run:
		// ChangesSince tells it to read everything again.
		if since != cl.gen {
			return true
		}
		if p.stopped {
			return false
		}
		if cl.wake == nil {
			cl.wake = make(chan struct{})
		}
		wake := cl.wake
		cl.waiters++
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-wake:
		}
		p.mu.Lock()
		cl.waiters--
		if ctx.Err() != nil {
			return false
		}
	}
}

// publishLocked settles the log, which wakes a waiting reader if
// something changed (p.mu held): every Step, and the operator's verbs,
// which should show at once. It costs the rows marked since the last.
func (p *Pool) publishLocked() {
	p.settleChangesLocked()
}

// wakeWaitersLocked releases every WaitChanges call (the pool stops).
func (p *Pool) wakeWaitersLocked() {
	if p.changes.wake != nil {
		close(p.changes.wake)
		p.changes.wake = nil
	}
}
