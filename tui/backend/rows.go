// The console's containers as compact rows (Rows), and the attached
// console's copy of them, kept current in place by the changes the daemon
// sends (GET /v1/containers?changed_since, docs/design.md §7.2).

package backend

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// Rows is a snapshot's containers as compact rows, in submission order.
// A remote backend keeps one and applies each refresh's changes to it in
// place (no second copy); read it only through its methods, which are
// safe while it changes. A row keeps its slot while the Rows lives: one
// taken out stays in it, Gone, and new ones take new slots at the end,
// so that a console's order of slots stays right across a refresh; when
// a quarter of the slots are gone, the next refresh compacts the live
// rows into new Rows (docs/design.md §7.2).
type Rows struct {
	mu   sync.RWMutex
	rows pages
	at   index // slot of each id in rows (gone ones are not)
	dead int   // gone slots
	// line is the slots of the rows that hold a place in the line, in
	// its order (numberLine); nil until it is numbered once. A refresh
	// takes out and puts back only the rows it touched (renumber).
	line []int32
	// places is each slot's place in the line as the console shows it,
	// apart from the rows (nil until the line is numbered; slots past
	// its end show none). Under the churn most of a long line's numbers
	// change at each refresh: written into the rows, they made each
	// refresh read and write every row of the line, far apart in memory
	// (BENCHMARKS.md, helper apply).
	places []place
	// noPlaces: the line was last numbered with no row in it showing
	// its place (every one waiting at quota, say), so every number is
	// 0; a refresh that puts no such row in leaves the numbers alone.
	noPlaces bool
	// ver counts the refreshes that changed a row; each row says at
	// which it last changed (Row.Ver), so that the console flags the
	// rows that changed.
	ver uint32
	// wName and wInst are the longest name and instance id (bytes) a
	// row has had, for the widths of the console's columns.
	wName, wInst int
	// byState and failed count the live rows by state and those that
	// failed, kept as rows change (tally): the console's header shows
	// them at every frame, and counting a million rows for it was a
	// third of an attached console's CPU under the churn (BENCHMARKS.md,
	// helper apply).
	byState map[view.State]int
	failed  int
}

// place is a slot's place in the line.
type place struct {
	n     int32  // its number (1 = next), 0 when it shows none
	ver   uint32 // the Rows' version at which n last changed
	shows bool   // its row holds a place and shows it (ReasonPosition)
}

// tally counts r (not gone) into the counts d times: +1 as it comes in,
// -1 as it goes or is replaced (s.mu held, or s not yet shared).
func (s *Rows) tally(r *Row, d int) {
	if r.gone {
		return
	}
	if s.byState == nil {
		s.byState = map[view.State]int{}
	}
	if n := s.byState[r.State] + d; n != 0 {
		s.byState[r.State] = n
	} else {
		delete(s.byState, r.State)
	}
	if r.Failed() {
		s.failed += d
	}
}

// Counts returns how many live rows there are in each state (a map of
// the caller's), how many in all, and how many failed.
func (s *Rows) Counts() (byState map[view.State]int, total, failed int) {
	if s == nil {
		return map[view.State]int{}, 0, 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	byState = make(map[view.State]int, len(s.byState))
	for st, n := range s.byState {
		byState[st] = n
	}
	return byState, s.rows.len() - s.dead, s.failed
}

// NewRows makes the rows of cs (a backend that reads whole lists, such as
// the in-process one), in the order given. A row that shows the same as
// its row in prev (the last snapshot's, nil for none) keeps its Ver;
// the others are at a new version.
func NewRows(cs []view.Container, prev *Rows) *Rows {
	var in Interner
	s := &Rows{rows: newPages(len(cs)), at: newIndex(len(cs))}
	if prev != nil {
		prev.mu.RLock()
		defer prev.mu.RUnlock()
		s.ver = prev.ver + 1
	}
	s.places = make([]place, len(cs))
	var pairs api.Pairs
	var tags []byte
	for i := range cs {
		r := rowOfMaps(&cs[i], &in, &pairs, &tags)
		n := placeOf(&cs[i])
		if !inLine(&r) {
			n = 0 // only a row in the line shows a place (Slots.Place)
		}
		s.places[i] = place{n: n, shows: n > 0}
		r.Ver = s.ver
		if prev != nil {
			if j, ok := prev.at.get(&prev.rows, r.ID); ok && same(prev.rows.at(int(j)), &r) && prev.placeAt(int(j)) == n {
				r.Ver = prev.rows.at(int(j)).Ver
			}
		}
		s.rows.push(r)
		s.at.put(&s.rows, r.ID, int32(s.rows.len()-1))
		s.widen(&r)
		s.tally(&r, 1)
	}
	return s
}

// widen keeps wName and wInst at least r's.
func (s *Rows) widen(r *Row) {
	if r.Name != r.ID {
		s.wName = max(s.wName, len(r.Name))
	}
	s.wInst = max(s.wInst, len(r.InstanceID))
}

// Len is how many containers there are.
func (s *Rows) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rows.len() - s.dead
}

// Slots is the rows by slot, valid inside Rows.Read only.
type Slots struct{ s *Rows }

// Len is the number of slots, gone ones included; Live those not gone.
func (v Slots) Len() int  { return v.s.rows.len() }
func (v Slots) Live() int { return v.s.rows.len() - v.s.dead }

// At is the row in slot i (not to be kept past Read).
func (v Slots) At(i int) *Row { return v.s.rows.at(i) }

// Gone reports whether slot i's row was taken out, without reading the
// row while no slot is gone (a queue whose rows only change): the
// table's order of every live slot asked it of each row at each
// refresh, a million rows far apart in memory (BENCHMARKS.md, helper
// apply).
func (v Slots) Gone(i int) bool { return v.s.dead > 0 && v.s.rows.at(i).gone }

// Index is the slot of the row with that id (false: none, or gone).
func (v Slots) Index(id string) (int, bool) {
	i, ok := v.s.at.get(&v.s.rows, id)
	return int(i), ok
}

// Version is the Rows' version (Row.Ver).
func (v Slots) Version() uint32 { return v.s.ver }

// Place is slot i's place in the line as its reason shows it ("position
// N in queue"), 0 when it shows none. Only a row in the line (waiting,
// not held, of a priority above 0) shows one, so a reader that finds a
// place need not read the row for its reason.
func (v Slots) Place(i int) int32 { return v.s.placeAt(i) }

// Ver is the version at which slot i's row, or its place, last changed.
func (v Slots) Ver(i int) uint32 {
	ver := v.s.rows.at(i).Ver
	if i < len(v.s.places) {
		ver = max(ver, v.s.places[i].ver)
	}
	return ver
}

// Widest is the longest name and instance id (bytes) a row has had.
func (v Slots) Widest() (name, instance int) { return v.s.wName, v.s.wInst }

// Read calls f with the rows read-locked: f must be short (a refresh
// waits for it) and must not call s's other methods.
func (s *Rows) Read(f func(v Slots)) {
	if s == nil {
		f(Slots{&Rows{}})
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	f(Slots{s})
}

// Get returns the row of id.
func (s *Rows) Get(id string) (Row, bool) {
	if s == nil {
		return Row{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.at.get(&s.rows, id)
	if !ok {
		return Row{}, false
	}
	return *s.rows.at(int(i)), true
}

// Each calls f with every row in order and its place (Slots.Place),
// read-locked (f must not keep r nor call s), and returns the version the
// rows were at: a row whose Ver is at most that has not changed since.
func (s *Rows) Each(f func(r *Row, place int32)) (ver uint32) {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range s.rows.len() {
		if r := s.rows.at(i); !r.gone {
			f(r, s.placeAt(i))
		}
	}
	return s.ver
}

// placeAt is slot i's number (s.mu held, or s not shared).
func (s *Rows) placeAt(i int) int32 { return s.placeOrNone(i).n }

// upsert puts r in (replacing the row of its id) and reports whether it
// was new (s.mu held, or s not yet shared).
func (s *Rows) upsert(r Row) bool {
	s.widen(&r)
	s.tally(&r, 1)
	if i, ok := s.at.get(&s.rows, r.ID); ok {
		old := s.rows.at(int(i))
		s.tally(old, -1)
		*old = r
		return false
	}
	s.rows.push(r)
	s.at.put(&s.rows, r.ID, int32(s.rows.len()-1))
	return true
}

// drop marks the rows of gone as gone in their slots, and appends to
// touched the slots of those that held a place in the line (s.mu held).
func (s *Rows) drop(gone map[string]bool, touched []int32) []int32 {
	for id := range gone {
		i, ok := s.at.get(&s.rows, id)
		if !ok {
			continue
		}
		r := s.rows.at(int(i))
		if inLine(r) {
			touched = append(touched, i)
		}
		s.at.del(&s.rows, id)
		s.tally(r, -1)
		r.gone, r.Ver = true, s.ver
		s.dead++
	}
	return touched
}

// compacted is s without its gone slots, as new Rows, its line the same
// rows at their new slots (s.fetch held by the caller: s is not changed
// meanwhile).
func (s *Rows) compacted() *Rows {
	live := s.rows.len() - s.dead
	n := &Rows{rows: newPages(live), at: newIndex(live), ver: s.ver, wName: s.wName, wInst: s.wInst,
		byState: maps.Clone(s.byState), failed: s.failed}
	for i := range s.rows.len() {
		if r := s.rows.at(i); !r.gone {
			n.rows.push(*r)
			n.at.put(&n.rows, r.ID, int32(n.rows.len()-1))
		}
	}
	if s.places != nil {
		n.places = make([]place, 0, live)
		for i := range s.rows.len() {
			if !s.rows.at(i).gone {
				n.places = append(n.places, s.placeOrNone(i))
			}
		}
	}
	if s.line != nil {
		n.line = make([]int32, len(s.line))
		for k, i := range s.line {
			// The line holds no gone row: each has its slot in n.
			j, _ := n.at.get(&n.rows, s.rows.at(int(i)).ID)
			n.line[k] = j
		}
	}
	return n
}

// placeOrNone is slot i's place, none past the end of places.
func (s *Rows) placeOrNone(i int) place {
	if i < len(s.places) {
		return s.places[i]
	}
	return place{}
}

// removeAll takes the rows of gone out, keeping the others' order, in
// one pass, on rows not yet shared (a read of every container).
func (s *Rows) removeAll(gone map[string]bool) {
	k := 0
	for i := range s.rows.len() {
		r := s.rows.at(i)
		if gone[r.ID] {
			s.at.del(&s.rows, r.ID)
			s.tally(r, -1)
			continue
		}
		if k != i {
			// No entry names slot k now: its row was taken out or
			// moved before; r's still names slot i, which holds r.
			*s.rows.at(k) = *r
			s.at.put(&s.rows, r.ID, int32(k))
		}
		k++
	}
	s.rows.truncate(k) // drops the strings of the rows past the end
}

// reindex rebuilds the index by id (s.mu held).
func (s *Rows) reindex() {
	s.at.reset()
	for i := range s.rows.len() {
		s.at.put(&s.rows, s.rows.at(i).ID, int32(i))
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
	// pairs and tags are the scratch of reading a change into a row
	// (rowOfPairs), kept from one to the next.
	pairs api.Pairs
	tags  []byte
	// changed and last are applyChanges' scratch, kept for the next
	// refresh while they are small (scratchKeep): made anew, they were
	// about a third of what a change allocated, and under the churn the
	// console's collections follow what it allocates (BENCHMARKS.md,
	// helper decode).
	changed []Row
	last    map[string]int
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
	var page []Row
	for {
		page = page[:0]
		ch, err := r.c.ContainerChangesPairs(ctx, gen, r.pageSize, 0, &rc.pairs, func(c *view.Container) {
			page = append(page, rowOfPairs(c, &rc.pairs, &rc.strs, &rc.tags))
		})
		if err != nil {
			return nil, err
		}
		if s == nil {
			s = &Rows{rows: newPages(ch.Available), at: newIndex(ch.Available)}
			if rc.rows != nil {
				s.ver = rc.rows.ver // the versions go on: a console's "changed" flags compare them
			}
		}
		if len(ch.Removed) > 0 {
			gone := make(map[string]bool, len(ch.Removed))
			for _, id := range ch.Removed {
				gone[id] = true
			}
			s.removeAll(gone)
		}
		for i := range page {
			s.upsert(page[i])
		}
		gen = ch.Generation
		rc.loaded.Store(int64(s.rows.len()))
		rc.total.Store(int64(max(ch.Available, s.rows.len())))
		if !ch.More {
			break
		}
	}
	if sortBySeq(&s.rows) {
		s.reindex()
	}
	s.numberLine()
	rc.rows, rc.gen = s, gen
	if s.rows.len() >= releaseMin {
		// What the read decoded is garbage now: its memory goes back to
		// the system at once (one collection, a fraction of a second at
		// a million) instead of over the next minutes, so that the
		// console's RSS is about what its copy holds (docs/design.md §7.2).
		debug.FreeOSMemory()
	}
	return s, nil
}

// releaseMin is the fewest containers after whose read the memory the
// read used is handed back at once (a variable for the tests).
var releaseMin = 100000

// sortBySeq puts rows in submission order, the order a console shows
// before it is told to sort, moving each row once (the changes come in the
// order of their changes, mostly that order already); it reports whether
// it moved any.
func sortBySeq(rows *pages) bool {
	n := rows.len()
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = rows.at(i-1).Seq <= rows.at(i).Seq
	}
	if sorted {
		return false
	}
	from := make([]int32, n) // from[k]: the row that goes to k
	for i := range from {
		from[i] = int32(i)
	}
	slices.SortFunc(from, func(a, b int32) int { return cmp.Compare(rows.at(int(a)).Seq, rows.at(int(b)).Seq) })
	// Follow each cycle of the permutation, holding one row aside.
	for k := range int32(n) {
		if from[k] == k {
			continue
		}
		held := *rows.at(int(k))
		j := k
		for from[j] != k {
			next := from[j]
			*rows.at(int(j)) = *rows.at(int(next))
			from[j] = j
			j = next
		}
		*rows.at(int(j)) = held
		from[j] = j
	}
	return true
}

// applyChanges reads what changed since the copy's generation, up to the
// generation the daemon was at when the first page was read, and applies
// it to the copy's rows in place (rc.fetch held). Changes made after that
// are the next refresh's, which the watch has woken for: under a churn a
// refresh that read on until no page was left read the changes made while
// it read, and showed the ones before them that much later. The changes
// are read whole before any is applied: a failed read leaves the rows as
// the last snapshot showed them.
func (r *Remote) applyChanges(ctx context.Context) error {
	rc := &r.copy
	gen := rc.gen
	var until uint64 // the daemon's generation at the first page
	changed := rc.changed[:0]
	last := rc.last // id → index in changed (the last of its changes)
	if last == nil {
		last = map[string]int{}
	}
	var gone map[string]bool
	defer func() { rc.keepScratch(changed, last) }()
	for {
		from := len(changed) // this page's changes start here
		ch, err := r.c.ContainerChangesPairs(ctx, gen, r.pageSize, 0, &rc.pairs, func(c *view.Container) {
			delete(gone, c.ID) // dropped, then its id used again
			switch k, ok := last[c.ID]; {
			case ok && k >= from:
				changed[k] = rowOfPairs(c, &rc.pairs, &rc.strs, &rc.tags)
				return
			case ok:
				changed[k].ID = "" // changed again: its last change is on this page
			}
			last[c.ID] = len(changed)
			changed = append(changed, rowOfPairs(c, &rc.pairs, &rc.strs, &rc.tags))
		})
		if err != nil {
			return err
		}
		// A page's removals come before its items (the items came
		// first to this reader): an id removed and changed on the same
		// page is changed, one changed on an earlier page is gone.
		for _, id := range ch.Removed {
			k, ok := last[id]
			switch {
			case ok && k >= from:
				continue
			case ok:
				changed[k].ID = "" // dropped after it changed
				delete(last, id)
			}
			if gone == nil {
				gone = map[string]bool{}
			}
			gone[id] = true
		}
		gen = ch.Generation
		if until == 0 {
			until = ch.Latest
		}
		if !ch.More || gen >= until {
			break
		}
	}
	rc.gen = gen
	rc.rows.apply(changed, gone)
	if s := rc.rows; s.dead >= compactMin && s.dead > s.rows.len()/4 {
		rc.rows = s.compacted()
	}
	return nil
}

// scratchKeep is the most changes whose scratch a refresh keeps for the
// next (about 2 MB of rows): a refresh after a long pause may read many
// more, and that memory goes back.
const scratchKeep = 1 << 14

// keepScratch keeps changed and last, emptied, for the next refresh when
// they are small (rc.fetch held).
func (rc *rowCopy) keepScratch(changed []Row, last map[string]int) {
	rc.changed, rc.last = nil, nil
	if cap(changed) <= scratchKeep {
		clear(changed) // no strings held past the refresh
		rc.changed = changed[:0]
	}
	if len(last) <= scratchKeep {
		clear(last)
		rc.last = last
	}
}

// compactMin is the fewest gone slots worth compacting the rows for.
const compactMin = 1024

// apply puts the changed rows in place (a row whose ID is "" is skipped)
// and marks the gone ones, new rows after the others in submission
// order, and numbers the line again if a row in it, before or after,
// changed. Readers wait only for the rows put in: the line is ordered
// without the lock.
func (s *Rows) apply(changed []Row, gone map[string]bool) {
	if len(changed) == 0 && len(gone) == 0 {
		return
	}
	s.mu.Lock()
	s.ver++
	// The slots of the rows that held or hold a place in the line (most
	// changes at a busy daemon are of running ones, which hold none).
	var touched []int32
	if len(gone) > 0 {
		touched = s.drop(gone, touched)
	}
	var added []Row
	for i := range changed {
		c := &changed[i]
		if c.ID == "" {
			continue
		}
		c.Ver = s.ver // its place is numbered by renumber, never by the daemon's text
		j, ok := s.at.get(&s.rows, c.ID)
		if !ok {
			added = append(added, *c)
			continue
		}
		old := s.rows.at(int(j))
		if inLine(old) || inLine(c) {
			touched = append(touched, j)
		}
		s.widen(c)
		s.tally(old, -1)
		s.tally(c, 1)
		*old = *c
	}
	// New ones after the rest in submission order, as the first read
	// left them (a batch submitted elsewhere may land between others).
	slices.SortFunc(added, func(a, b Row) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range added {
		s.upsert(added[i])
		if inLine(&added[i]) {
			j, _ := s.at.get(&s.rows, added[i].ID)
			touched = append(touched, j)
		}
	}
	s.mu.Unlock()
	if len(touched) > 0 {
		s.renumber(touched)
	}
}

// bySchedule compares two slots' rows in the scheduling order of the
// line (as engine/scheduler counts): Locked before Queued, priority
// descending, first seen, submission.
func (s *Rows) bySchedule(a, b int32) int {
	ra, rb := s.rows.at(int(a)), s.rows.at(int(b))
	if al, bl := ra.State == view.Locked, rb.State == view.Locked; al != bl {
		if al {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(rb.Priority, ra.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(ra.FirstSeenAt, rb.FirstSeenAt); c != 0 {
		return c
	}
	return cmp.Compare(ra.Seq, rb.Seq)
}

// numberLine gives every container waiting its turn ("position N") its
// number: the daemon leaves the numbers out of its changes, as every pass
// at quota moves them all. A container holds a place in the line while it
// waits (Queued or Locked), is not held and has a priority above 0 — as
// the scheduler counts it (engine/scheduler) — in the scheduling order
// (before). It orders the whole line; renumber, after a refresh, only the
// rows the refresh touched. Only the numbers are written under s.mu: the
// caller is the one that changes s (or s is not yet shared), so its reads
// need no lock.
func (s *Rows) numberLine() {
	line := s.line[:0]
	for i := range s.rows.len() {
		if r := s.rows.at(i); !r.gone && inLine(r) {
			line = append(line, int32(i))
		}
	}
	// Mostly in order already (slots are in submission order): the sort
	// finds the runs.
	slices.SortFunc(line, s.bySchedule)
	if line == nil {
		line = []int32{} // numbered: renumber goes on from it
	}
	s.line = line
	s.mu.Lock()
	defer s.mu.Unlock()
	s.growPlaces()
	for i := range s.rows.len() {
		p, r := &s.places[i], s.rows.at(i)
		p.shows = !r.gone && inLine(r) && r.ReasonCode == view.ReasonPosition
		if p.n != 0 && (r.gone || !inLine(r)) {
			p.n, p.ver = 0, s.ver
		}
	}
	s.numberAll()
}

// growPlaces makes places as long as the rows (s.mu held).
func (s *Rows) growPlaces() {
	if n := s.rows.len(); len(s.places) < n {
		s.places = append(s.places, make([]place, n-len(s.places))...)
	}
}

// renumber orders the line again after a refresh that touched the rows
// in the slots touched (changed, added or taken out, each of which held
// or holds a place): the rows not touched keep their order, so only the
// touched ones are taken out and merged back in where they now go. A
// line of a million is 4 MB kept, where ordering it from nothing made
// 32 MB of sort keys at each refresh (BENCHMARKS.md, "The console's
// memory under churn").
func (s *Rows) renumber(touched []int32) {
	if s.line == nil {
		s.numberLine()
		return
	}
	marked := make([]uint64, (s.rows.len()+63)/64)
	for _, i := range touched {
		marked[i/64] |= 1 << (i % 64)
	}
	kept := s.line[:0]
	for _, i := range s.line {
		if marked[i/64]&(1<<(i%64)) == 0 {
			kept = append(kept, i)
		}
	}
	var back []int32 // the touched rows that hold a place now, once each
	for _, i := range touched {
		if marked[i/64]&(1<<(i%64)) == 0 {
			continue // a slot touched twice
		}
		marked[i/64] &^= 1 << (i % 64)
		if r := s.rows.at(int(i)); !r.gone && inLine(r) {
			back = append(back, i)
		}
	}
	slices.SortFunc(back, s.bySchedule)
	// Merge from the end, so that the kept rows move only once, each
	// touched row's place found by a binary search and the kept rows
	// after it moved as a block: a comparison reads two rows, far apart
	// in memory in a churned line, and comparing every kept row made the
	// merge most of a refresh at a million (BENCHMARKS.md, helper decode).
	k := len(kept) // line[:k]: the kept rows not yet moved
	line := slices.Grow(kept, len(back))[:k+len(back)]
	w := len(line) // line[w:]: in place
	for j := len(back) - 1; j >= 0; j-- {
		at := sort.Search(k, func(x int) bool { return s.bySchedule(back[j], line[x]) < 0 })
		w -= k - at
		copy(line[w:], line[at:k])
		w--
		line[w] = back[j]
		k = at
	}
	s.line = line
	s.mu.Lock()
	defer s.mu.Unlock()
	s.growPlaces()
	shown := false // a row put back shows its place
	for _, i := range touched {
		p, r := &s.places[i], s.rows.at(int(i))
		p.shows = !r.gone && inLine(r) && r.ReasonCode == view.ReasonPosition
		shown = shown || p.shows
		if p.n != 0 && (r.gone || !inLine(r)) {
			p.n, p.ver = 0, s.ver
		}
	}
	// At quota with no row showing its place, the numbers are all 0 and
	// stay so (BENCHMARKS.md, helper decode).
	if s.noPlaces && !shown {
		return
	}
	s.numberAll()
}

// numberAll writes each place in the line its number (s.mu held): it
// reads the line and the places, no row.
func (s *Rows) numberAll() {
	s.noPlaces = true
	for n, i := range s.line {
		p := &s.places[i]
		pos := int32(n + 1)
		if !p.shows {
			pos = 0 // holds a place, shows another reason
		} else {
			s.noPlaces = false
		}
		if p.n != pos {
			p.n, p.ver = pos, s.ver
		}
	}
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
