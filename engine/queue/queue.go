// The Queue: opening the store, loading it, subscribing to changes.

package queue

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/view"
)

// ErrNotFound is returned for an unknown container id.
var ErrNotFound = view.NewError(view.KindNotFound, "no such container")

// TransitionError is an illegal state change; nothing was written.
type TransitionError struct {
	ID       string
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("container %s: illegal transition %s -> %s", e.ID, e.From, e.To)
}

// Options configure a Queue.
type Options struct {
	// Store keeps the queue durably (engine/store); the queue closes it.
	Store              store.Store
	Clock              clock.Clock
	DefaultMaxAttempts int
	// DefaultPreemptible is scheduling.preemptible for a spec without one
	// ([containers] always_use_preemptible).
	DefaultPreemptible bool
	// EventsInMemory is how many recent events are kept for fast reads.
	EventsInMemory int
	// KeepFinished is how many final containers are kept, those that
	// ended last (0 = all); older ones are dropped, with their stored
	// output, at a flush.
	KeepFinished int
	// Tombstones is how many dropped containers' ids are kept for readers
	// of changes (changes.go; 0 = DefaultTombstones).
	Tombstones int
	// Parts are other records kept in the store and written in its
	// flushes (parts.go).
	Parts []Part
	// StoreRetry is how long a pass's flush waits before trying the store
	// again after a failed write, doubled at each failure in a row up to
	// MaxStoreRetry (storehealth.go); 0 tries at every pass.
	StoreRetry time.Duration
}

// Queue is the container index over a store. One mutex (mu) guards every
// in-memory record; flushMu serialises flushes so that a later snapshot
// never lands before an earlier one.
type Queue struct {
	store store.Store
	clock clock.Clock
	opts  Options

	flushMu sync.Mutex

	mu         sync.Mutex
	byID       idIndex                // every container by id (index.go)
	active     []*Container           // non-final containers, in scheduling order after sortLocked
	finished   []*Container           // final containers: loaded ones by Seq, then as they leave active
	unsorted   bool                   // q.active needs a full sort (after a load)
	moved      []*Container           // containers whose sort key changed since the last sortLocked (order.go)
	keys       []orderKey             // the key each of q.active is placed with, in the same order (order.go)
	side       []entry                // each of q.active's entry (entries.go), in the same order
	carry      map[*Container]entry   // sortLocked's scratch: the entries of re-placed ones, for their reasons
	shapeIDs   map[Constraints]uint16 // shape ids (entries.go); shapes lists them by id
	shapes     []Constraints
	posBuf     []int        // sortLocked's scratch
	oldBuf     []keyed      // sortLocked's scratch
	insBuf     []keyed      // sortLocked's scratch
	insSideBuf []entry      // sortLocked's scratch
	gapBuf     []int        // sortLocked's scratch
	runBuf     []orderRun   // sortLocked's scratch
	bySeq      []*Container // every container of byID by Seq (byseq.go)
	labels     labelIndex   // the Seqs of bySeq by label (labelindex.go)
	tx         Tx           // the pass's, reused (Pass)
	// flushBatch and flushRecs are Flush's scratch, reused (flushMu).
	flushBatch store.Batch
	flushRecs  []*Container // the records a flush writes (put back in q.dirty if the write fails)
	// gen counts changes a reader of the containers could see (records,
	// pending reasons, submits, drops), so a client can tell its copy is
	// still current.
	gen uint64
	// changes, tombs, tombFloor and logged are the change log readers
	// of changes follow (changes.go); logged is the generation of its
	// newest entry or tombstone.
	changes   []change
	tombs     []tombstone
	tombFloor uint64
	logged    uint64
	// counts is how many containers of byID are in each state; it changes
	// only through countLocked, uncountLocked and setStateLocked.
	counts map[State]int
	// dirty lists the records changed since the last flush, each once
	// (Container.dirty): a slice, not a map by id, so a flush of
	// thousands neither hashes their ids nor looks each up.
	dirty     []*Container
	newEvents []Event
	// spareEvents is an emptied events array for newEvents after the
	// flush that wrote it (Flush), so a pass's events do not regrow it.
	spareEvents []Event
	recent      []Event // the last EventsInMemory events, oldest first (a window of recentBuf)
	recentBuf   []Event
	nextEvent   uint64
	nextSeq     uint64
	paused      bool
	subs        map[int]chan struct{}
	nextSub     int
	health      storeHealth // storehealth.go
	// shared holds the values records repeat (intern.go); it has its own
	// lock: submits intern outside mu.
	shared interner
}

// Open loads every record from opts.Store into a new Queue. If it fails,
// the store is closed.
func Open(opts Options) (*Queue, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.DefaultMaxAttempts <= 0 {
		opts.DefaultMaxAttempts = 3
	}
	if opts.EventsInMemory <= 0 {
		opts.EventsInMemory = 1000
	}
	if opts.Tombstones <= 0 {
		opts.Tombstones = DefaultTombstones
	}
	q := &Queue{
		store: opts.Store, clock: opts.Clock, opts: opts,
		byID:     newIDIndex(),
		counts:   map[State]int{},
		subs:     map[int]chan struct{}{},
		carry:    map[*Container]entry{},
		shapeIDs: map[Constraints]uint16{},
	}
	if err := q.load(); err != nil {
		opts.Store.Close()
		return nil, err
	}
	return q, nil
}

// load builds the index from the store's records and events.
func (q *Queue) load() error {
	var events []Event
	ev := func(seq uint64, j []byte) error {
		e, err := decodeEvent(seq, j)
		events = append(events, e)
		return err
	}
	loaded, err := q.store.Load(q.opts.EventsInMemory, loader{q}, ev)
	if err != nil {
		return err
	}
	slices.SortFunc(q.finished, func(a, b *Container) int { return cmp.Compare(a.Seq, b.Seq) })
	q.bySeq = make([]*Container, 0, q.byID.len())
	q.bySeq = append(append(q.bySeq, q.active...), q.finished...)
	slices.SortFunc(q.bySeq, func(a, b *Container) int { return cmp.Compare(a.Seq, b.Seq) })
	q.labels = labelIndex{}
	for _, c := range q.bySeq {
		q.labelAddLocked(c)
	}
	q.unsorted = true
	q.recent, q.recentBuf, q.nextEvent = events, events, loaded.NextEvent
	q.paused = loaded.Paused
	q.startChangesLocked()
	return q.loadParts()
}

// Close flushes pending writes and closes the store.
func (q *Queue) Close() error {
	ferr := q.Flush()
	q.mu.Lock()
	for id, ch := range q.subs {
		close(ch)
		delete(q.subs, id)
	}
	q.mu.Unlock()
	return errors.Join(ferr, q.store.Close())
}

// Subscribe returns a channel that receives a value (coalesced: at most one
// pending) whenever containers change, and a function to stop.
func (q *Queue) Subscribe() (<-chan struct{}, func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	id := q.nextSub
	q.nextSub++
	ch := make(chan struct{}, 1)
	q.subs[id] = ch
	return ch, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if c, ok := q.subs[id]; ok {
			close(c)
			delete(q.subs, id)
		}
	}
}

// notifyLocked wakes subscribers; q.mu must be held.
func (q *Queue) notifyLocked() {
	for _, ch := range q.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "c-" + hex.EncodeToString(b[:])
}

// Submit validates spec, stores a new Queued container durably, and returns
// it. An invalid spec stores nothing.
func (q *Queue) Submit(spec Spec, actor string) (view.Container, error) {
	cs, err := q.SubmitBatch([]Spec{spec}, actor)
	if err != nil {
		return view.Container{}, err
	}
	return cs[0], nil
}

// SubmitBatch stores several containers in one commit. If any spec is
// invalid, nothing is stored and the error names its index.
func (q *Queue) SubmitBatch(specs []Spec, actor string) ([]view.Container, error) {
	for i := range specs {
		if err := ValidateSpec(&specs[i]); err != nil {
			if len(specs) == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("container %d: %w", i, err)
		}
	}
	now := q.clock.Now().UTC()
	q.mu.Lock()
	seq := q.nextSeq
	q.nextSeq += uint64(len(specs))
	q.mu.Unlock()
	recs := make([]*Container, len(specs))
	for i := range specs {
		recs[i] = q.newContainer(&specs[i], now, seq+uint64(i))
	}
	// The submit events go into the same commit as the containers (one
	// fsync per group of submits, not two). They take their sequence
	// numbers and join the in-memory log first, so the log stays in order
	// for readers that follow it (as the events a flush writes do); a
	// failed commit takes them back out.
	events := make([]Event, len(recs))
	q.mu.Lock()
	for i, c := range recs {
		events[i] = q.logEventLocked(now, actor, "verb", c.ID, "submit", "")
	}
	q.mu.Unlock()
	var batch store.Batch // concurrent submits: each its own
	err := encodeRecords(&batch, recs)
	if err == nil {
		err = encodeEvents(&batch, events)
	}
	if err == nil {
		err = q.store.Submit(&batch)
	}
	if err != nil {
		q.mu.Lock()
		q.unlogEventsLocked(events)
		q.writeFailedLocked(err)
		q.mu.Unlock()
		return nil, fmt.Errorf("store container: %w", err)
	}
	out := make([]view.Container, len(recs))
	q.mu.Lock()
	for i, c := range recs {
		q.byID.put(c)
		q.countLocked(c)
		c.shape = q.shapeLocked(c.RuntimeConstraints)
		q.markMovedLocked(c)
		out[i] = c.view(Pending{})
	}
	q.addSeqLocked(recs)
	for _, c := range recs {
		q.changedLocked(c)
	}
	q.notifyLocked()
	q.mu.Unlock()
	return out, nil
}

func (q *Queue) newContainer(spec *Spec, now time.Time, seq uint64) *Container {
	prio := 1
	if spec.Priority != nil {
		prio = *spec.Priority
	}
	maxAttempts := spec.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = q.opts.DefaultMaxAttempts
	}
	policy := spec.RestartPolicy
	if policy == "" {
		policy = RestartNever
	}
	c := &Container{
		State: Queued, Priority: prio, RuntimeConstraints: spec.RuntimeConstraints, FirstSeenAt: now,
		ContainerBody: view.ContainerBody{
			ID: newID(), Name: spec.Name, Command: spec.Command,
			Env: spec.Env, Labels: spec.Labels, Image: spec.Image, Scheduling: spec.Scheduling,
			MaxAttempts: maxAttempts, RestartPolicy: policy, CreatedAt: now,
		},
		ContainerTail: view.ContainerTail{Seq: seq},
	}
	// The record says what was decided: preemptible or not, and the
	// health check's effective settings.
	pre := q.opts.DefaultPreemptible
	if spec.Scheduling.Preemptible != nil {
		pre = *spec.Scheduling.Preemptible
	}
	c.Scheduling.Preemptible = &pre
	c.HealthCheck = healthWithDefaults(spec.HealthCheck)
	if c.Name == "" {
		c.Name = c.ID
	}
	// The record shares no map or slice with the caller's spec: interning
	// copies what it has not seen.
	q.shared.record(c)
	c.setHints()
	return c
}

// Get returns a copy of one container.
func (q *Queue) Get(id string) (view.Container, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, ok := q.byID.lookup(id)
	if !ok {
		return view.Container{}, false
	}
	return q.viewLocked(c), true
}

// Len returns the number of containers, and how many are not final.
func (q *Queue) Len() (total, active int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// The counts by state are exact; q.active lags until the next sort.
	return q.byID.len(), q.byID.len() - q.finalLocked()
}

// Counts returns how many containers are in each state, without walking
// them.
func (q *Queue) Counts() map[State]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[State]int, len(q.counts))
	for s, n := range q.counts {
		if n > 0 {
			out[s] = n
		}
	}
	return out
}

// countLocked adds a container that joins byID to the counts by state.
func (q *Queue) countLocked(c *Container) { q.counts[c.State]++ }

// uncountLocked takes a container that leaves byID out of the counts.
func (q *Queue) uncountLocked(c *Container) { q.counts[c.State]-- }

// setStateLocked moves c to state to, keeping the counts by state and the
// scheduling order's dirty flag right. The caller checks the transition.
func (q *Queue) setStateLocked(c *Container, to State) {
	if rank(c.State) != rank(to) || to.Final() {
		q.markMovedLocked(c)
	}
	q.counts[c.State]--
	q.counts[to]++
	c.State = to
}

// markDirtyLocked notes that c changed, for the next flush to write.
func (q *Queue) markDirtyLocked(c *Container) {
	if !c.dirty {
		c.dirty = true
		q.dirty = append(q.dirty, c)
	}
}

// finalLocked is how many containers are Complete or Cancelled (some may
// still sit in q.active until the next sort).
func (q *Queue) finalLocked() int { return q.counts[Complete] + q.counts[Cancelled] }

// Each calls fn with every container under the queue's lock: active ones
// in scheduling order, then final ones in a stable order (those that end
// later come after), so paging through a list neither repeats nor skips
// rows. fn must not call the Queue, and may keep c only to pass it to
// Views later (its fields change under the lock).
func (q *Queue) Each(fn func(c *Container) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sortLocked()
	for _, c := range q.active {
		if !fn(c) {
			return
		}
	}
	for _, c := range q.finished {
		if !fn(c) {
			return
		}
	}
}

// Generation changes whenever a container changes in a way a reader could
// see (its record, its pending reason), one is submitted or one is dropped.
func (q *Queue) Generation() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.gen
}

// Views returns copies of cs (records handed to an Each callback), taken
// together under the queue's lock.
func (q *Queue) Views(cs []*Container) []view.Container {
	out := make([]view.Container, len(cs))
	q.mu.Lock()
	defer q.mu.Unlock()
	q.viewsLocked(cs, out)
	return out
}

// Paused reports whether the scheduler is paused (persisted).
func (q *Queue) Paused() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.paused
}

// SetPaused records the scheduler's pause flag durably with an event.
func (q *Queue) SetPaused(paused bool, actor, reason string) error {
	q.mu.Lock()
	q.paused = paused
	verb := "resume"
	if paused {
		verb = "pause"
	}
	q.addEventLocked(q.clock.Now().UTC(), actor, "verb", "scheduler", verb, reason)
	q.notifyLocked()
	q.mu.Unlock()
	return q.Flush()
}

// scheduling order: Running, then Locked, then Queued; priority desc;
// first seen asc; submission order.
func rank(s State) int {
	switch s {
	case Running:
		return 0
	case Locked:
		return 1
	}
	return 2
}

func compareContainers(a, b *Container) int {
	if c := cmp.Compare(rank(a.State), rank(b.State)); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := a.FirstSeenAt.Compare(b.FirstSeenAt); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// addEventLocked records an event for the next flush to write.
func (q *Queue) addEventLocked(t time.Time, actor, kind, target, action, reason string) {
	q.newEvents = append(q.newEvents, q.logEventLocked(t, actor, kind, target, action, reason))
}

// logEventLocked gives an event the next sequence number and adds it to the
// in-memory log; the caller writes it to the store.
func (q *Queue) logEventLocked(t time.Time, actor, kind, target, action, reason string) Event {
	e := Event{Seq: q.nextEvent, Time: t, Actor: actor, Kind: kind, Target: target, Action: action, Reason: reason}
	q.nextEvent++
	// recent is the window of the newest EventsInMemory events at the end
	// of recentBuf, which is cut back in one copy when it reaches twice
	// that: no shift of the whole window per event.
	if len(q.recentBuf) >= 2*q.opts.EventsInMemory {
		n := copy(q.recentBuf, q.recent)
		clear(q.recentBuf[n:])
		q.recentBuf = q.recentBuf[:n]
	}
	q.recentBuf = append(q.recentBuf, e)
	q.recent = q.recentBuf[max(0, len(q.recentBuf)-q.opts.EventsInMemory):]
	return e
}

// unlogEventsLocked takes events that could not be written back out of
// the in-memory log (their sequence numbers stay unused).
func (q *Queue) unlogEventsLocked(events []Event) {
	drop := make(map[uint64]bool, len(events))
	for _, e := range events {
		drop[e.Seq] = true
	}
	q.recentBuf = slices.DeleteFunc(q.recentBuf, func(e Event) bool { return drop[e.Seq] })
	q.recent = q.recentBuf[max(0, len(q.recentBuf)-q.opts.EventsInMemory):]
}

// AddEvent records an event (e.g. a cloud error or an instance verb) and
// writes it durably.
func (q *Queue) AddEvent(actor, kind, target, action, reason string) error {
	q.mu.Lock()
	q.addEventLocked(q.clock.Now().UTC(), actor, kind, target, action, reason)
	q.notifyLocked()
	q.mu.Unlock()
	return q.Flush()
}

// StoreLogsBatch keeps the outputs of finished containers (each its end,
// as the caller cut it to [containers] max_output), so they can be read
// after the runner has deleted its files, in one transaction: one commit
// (and its syncs) for a runner's whole batch of forgets.
func (q *Queue) StoreLogsBatch(ids []string, outputs [][]byte) error {
	known := make([]bool, len(ids))
	someKnown := false
	var err error
	q.mu.Lock()
	for i, id := range ids {
		_, known[i] = q.byID.lookup(id)
		someKnown = someKnown || known[i]
	}
	q.mu.Unlock()
	if !someKnown {
		return nil // all dropped (keep_finished) before their output arrived
	}
	if !slices.Contains(known, false) {
		err = q.store.PutOutputs(ids, outputs)
	} else {
		var kids []string
		var kouts [][]byte
		for i, id := range ids {
			if known[i] {
				kids, kouts = append(kids, id), append(kouts, outputs[i])
			}
		}
		err = q.store.PutOutputs(kids, kouts)
	}
	if err != nil && len(ids) == 1 {
		return fmt.Errorf("store logs of %s: %w", ids[0], err)
	}
	if err != nil {
		return fmt.Errorf("store logs of %d containers: %w", len(ids), err)
	}
	return nil
}

// SetLogsError records why a container's output is not stored (msg "" once
// it is) and reports whether that changed the record. The change is written
// with the next flush; until then it is visible in memory.
func (q *Queue) SetLogsError(id, msg string) bool {
	return q.setOutputNote(id, func(c *Container) bool {
		if c.LogsError == msg {
			return false
		}
		c.LogsError = msg
		return true
	})
}

// setOutputNote applies set, which reports whether it changed anything, to
// container id's record, and marks a changed record for the next flush.
func (q *Queue) setOutputNote(id string, set func(c *Container) bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, ok := q.byID.lookup(id)
	if !ok || !set(c) {
		return false
	}
	q.changedLocked(c)
	q.markDirtyLocked(c)
	q.notifyLocked()
	return true
}

// StoredLogs returns the output kept by StoreLogsBatch, if any, as logs
// shows it (StoredOutput.Text).
func (q *Queue) StoredLogs(id string) ([]byte, bool, error) {
	s, found, err := q.StoredOutput(id)
	if err != nil || !found {
		return nil, found, err
	}
	return s.Text(), true, nil
}

// AppendEvent records an event to be written with the next flush (the end
// of the next pass); for frequent machine events that need no fsync each.
func (q *Queue) AppendEvent(actor, kind, target, action, reason string) {
	q.mu.Lock()
	q.addEventLocked(q.clock.Now().UTC(), actor, kind, target, action, reason)
	q.notifyLocked()
	q.mu.Unlock()
}

// Events returns up to limit events with Seq > since, oldest first, read
// from memory when recent enough and from the file otherwise.
func (q *Queue) Events(since uint64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	q.mu.Lock()
	if len(q.recent) > 0 && q.recent[0].Seq <= since+1 {
		i, _ := slices.BinarySearchFunc(q.recent, since+1, func(e Event, s uint64) int { return cmp.Compare(e.Seq, s) })
		out := append([]Event(nil), q.recent[i:min(len(q.recent), i+limit)]...)
		q.mu.Unlock()
		return out, nil
	}
	q.mu.Unlock()
	if err := q.Flush(); err != nil {
		return q.eventsUnwritten(since, limit) // storehealth.go
	}
	return q.storedEvents(since, limit)
}

// storedEvents returns up to limit events with Seq > since from the
// store, oldest first.
func (q *Queue) storedEvents(since uint64, limit int) ([]Event, error) {
	var out []Event
	err := q.store.Events(since, func(seq uint64, j []byte) (bool, error) {
		e, err := decodeEvent(seq, j)
		if err != nil {
			return false, err
		}
		out = append(out, e)
		return len(out) < limit, nil
	})
	return out, err
}

// dropFinishedLocked removes from memory the final containers beyond
// KeepFinished (those that ended first, at most store.MaxDeletesPerFlush) and returns them
// for the flush to delete from the store (after writing any change to them
// in the same transaction).
func (q *Queue) dropFinishedLocked() []*Container {
	if q.opts.KeepFinished <= 0 {
		return nil
	}
	if q.finalLocked() > len(q.finished) {
		// Some that ended are still in q.active: the incremental sort
		// (order.go) moves them, re-placing only what changed.
		q.sortLocked()
	}
	n := min(len(q.finished)-q.opts.KeepFinished, store.MaxDeletesPerFlush)
	if n <= 0 {
		return nil
	}
	drop := slices.Clone(q.finished[:n])
	q.finished = slices.Delete(q.finished, 0, n)
	for _, c := range drop {
		q.byID.remove(c.ID)
		q.uncountLocked(c)
	}
	q.removeSeqLocked(drop)
	q.labelsDroppedLocked(drop)
	q.droppedLocked(drop)
	q.notifyLocked()
	return drop
}

// overFinishedLocked reports whether more final containers are kept than
// KeepFinished allows (counting those not yet moved out of q.active).
func (q *Queue) overFinishedLocked() bool {
	return q.opts.KeepFinished > 0 && q.finalLocked() > q.opts.KeepFinished
}

// undropLocked puts back containers whose deletion could not be written.
func (q *Queue) undropLocked(drop []*Container) {
	if len(drop) == 0 {
		return
	}
	for _, c := range drop {
		q.byID.put(c)
		c.hints &^= hintDropped
		q.countLocked(c)
		q.changedLocked(c) // back, after its tombstone
	}
	for _, c := range drop { // oldest ended first: not in Seq order
		q.addSeqLocked([]*Container{c})
	}
	q.finished = append(drop, q.finished...)
}
