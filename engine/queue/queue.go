// The Queue: opening the store, loading it, subscribing to changes.

package queue

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/view"
)

var (
	bucketContainers = []byte("containers")
	bucketMeta       = []byte("meta")
	bucketLogs       = []byte("logs")
	keyPaused        = []byte("paused")
)

// Containers are keyed by their sequence number (big-endian), not their
// random id: submits then append at the end of the tree, pages fill up
// (appendFill), and a write touches only the pages of the records it
// changes, so the store's file and the pages mapped from it stay small.
func containerKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// appendFill is the page fill for buckets written in key order (bbolt's
// default of half-full pages suits random inserts).
const appendFill = 0.95

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
	Path               string // bbolt file; its directory is created
	Clock              clock.Clock
	DefaultMaxAttempts int
	// DefaultPreemptible is scheduling.preemptible for a spec without one
	// ([containers] always_use_preemptible).
	DefaultPreemptible bool
	// EventsInMemory is how many recent events are kept for fast reads.
	EventsInMemory int
	// EventRetention is how many of the newest events the store keeps
	// (0 = all); older ones are deleted as new ones are written.
	EventRetention int
	// KeepFinished is how many final containers are kept, those that
	// ended last (0 = all); older ones are dropped, with their stored
	// output, at a flush.
	KeepFinished int
	// NoSync skips fsync on commit: for benchmarks and tests only.
	NoSync bool
}

// Queue is the container store. One mutex (mu) guards every in-memory
// record; flushMu serialises writes to the file so that a later snapshot
// never lands before an earlier one.
type Queue struct {
	db    *bolt.DB
	clock clock.Clock
	opts  Options
	group *groupCommit // submits and stored logs

	flushMu sync.Mutex

	mu         sync.Mutex
	byID       map[string]*Container
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
	tx         Tx           // the pass's, reused (Pass)
	// flushBuf and flushRecs are Flush's scratch, reused (flushMu).
	flushBuf  []byte
	flushRecs []*Container // the records a flush writes (put back in q.dirty if the write fails)
	// journalLen is how many entries the journal bucket holds and
	// journalNext the key of the next (journal.go); flushMu guards both.
	journalLen  int
	journalNext uint64
	foldMin     int // tests: the fold threshold, when not 0
	rebuildMax  int // tests: rebuildMaxRecords, when not 0
	keepJournal int // tests: journalKeep, when not 0
	batchMax    int // tests: maxBatchBytes, when not 0
	// gen counts changes a reader of the containers could see (records,
	// pending reasons, submits, drops), so a client can tell its copy is
	// still current.
	gen uint64
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
	// pausedStored is the pause flag as the store holds it (flushMu): a
	// flush puts it only when it changed, not rewriting meta's page each time.
	pausedStored bool
	subs         map[int]chan struct{}
	nextSub      int
	health       storeHealth // storehealth.go
}

// Open opens (or creates) the store at opts.Path and loads every record.
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
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	db, err := bolt.Open(opts.Path, 0o600, &bolt.Options{Timeout: 2 * time.Second, NoSync: opts.NoSync, InitialMmapSize: initialMmap})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w (is another dispatcher using this state_dir?)", opts.Path, err)
	}
	q := &Queue{
		db: db, clock: opts.Clock, opts: opts, group: &groupCommit{db: db},
		byID:     map[string]*Container{},
		counts:   map[State]int{},
		subs:     map[int]chan struct{}{},
		carry:    map[*Container]entry{},
		shapeIDs: map[Constraints]uint16{},
	}
	if err := q.load(); err != nil {
		db.Close()
		return nil, err
	}
	return q, nil
}

func (q *Queue) load() error {
	return q.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketContainers, bucketEvents, bucketMeta, bucketLogs, bucketJournal} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		// The journal is read first (at most about as many entries as
		// records: Queue.foldThreshold), so that a record it holds a later
		// version of is decoded once, from there.
		latest, jn, err := readJournal(tx.Bucket(bucketJournal), 0)
		if err != nil {
			return fmt.Errorf("load journal: %w", err)
		}
		q.journalLen, q.journalNext = jn, 0
		if cur := tx.Bucket(bucketJournal).Cursor(); jn > 0 {
			k, _ := cur.Last()
			q.journalNext = binary.BigEndian.Uint64(k) + 1
		}
		journaled := func(seq uint64) (journalEntry, bool) {
			i, ok := slices.BinarySearchFunc(latest, seq, func(e journalEntry, s uint64) int { return cmp.Compare(e.seq, s) })
			if !ok {
				return journalEntry{}, false
			}
			return latest[i], true
		}
		add := func(k, v []byte) error {
			c := &Container{}
			if err := json.Unmarshal(v, c); err != nil {
				return fmt.Errorf("load container %x: %w", k, err)
			}
			if err := c.upgrade(v); err != nil {
				return fmt.Errorf("load container %x: %w", k, err)
			}
			c.setHints()
			c.shape = q.shapeLocked(c.RuntimeConstraints)
			q.byID[c.ID] = c
			q.countLocked(c)
			if c.State.Final() {
				q.finished = append(q.finished, c)
			} else {
				q.active = append(q.active, c)
			}
			q.nextSeq = max(q.nextSeq, c.Seq+1)
			return nil
		}
		cb := tx.Bucket(bucketContainers)
		var oldKeys [][]byte  // records of an earlier layout, keyed by id
		var inBucket []uint64 // journaled Seqs also in the bucket
		err = cb.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				oldKeys = append(oldKeys, k)
			} else if e, ok := journaled(binary.BigEndian.Uint64(k)); ok {
				inBucket = append(inBucket, e.seq)
				if e.body == nil {
					return nil // dropped
				}
				v = e.body
			}
			return add(k, v)
		})
		if err != nil {
			return err
		}
		// A journaled record not in the bucket (not written there by
		// this version, which puts submits in the bucket, but allowed).
		for _, e := range latest {
			if _, ok := slices.BinarySearch(inBucket, e.seq); !ok && e.body != nil {
				if err := add(journalKey(e.seq), e.body); err != nil {
					return err
				}
			}
		}
		for _, k := range oldKeys {
			c := q.byID[string(k)]
			if c == nil {
				return fmt.Errorf("load container %s: the record's id does not match its key", k)
			}
			body := cb.Get(k)
			if err := cb.Put(containerKey(c.Seq), slices.Clone(body)); err != nil {
				return fmt.Errorf("migrate container %s: %w", k, err)
			}
			if err := cb.Delete(k); err != nil {
				return fmt.Errorf("migrate container %s: %w", k, err)
			}
		}
		slices.SortFunc(q.finished, func(a, b *Container) int { return cmp.Compare(a.Seq, b.Seq) })
		q.bySeq = make([]*Container, 0, len(q.byID))
		q.bySeq = append(append(q.bySeq, q.active...), q.finished...)
		slices.SortFunc(q.bySeq, func(a, b *Container) int { return cmp.Compare(a.Seq, b.Seq) })
		q.unsorted = true
		if q.recent, q.nextEvent, err = loadEvents(tx, q.opts.EventsInMemory); err != nil {
			return err
		}
		q.recentBuf = q.recent
		q.paused = string(tx.Bucket(bucketMeta).Get(keyPaused)) == "true"
		q.pausedStored = q.paused
		return nil
	})
}

// Close flushes pending writes, folds the journal into the containers
// bucket (journal.go) and closes the file.
func (q *Queue) Close() error {
	ferr := q.Flush()
	if ferr == nil {
		ferr = q.fold()
	}
	q.mu.Lock()
	for id, ch := range q.subs {
		close(ch)
		delete(q.subs, id)
	}
	q.mu.Unlock()
	return errors.Join(ferr, q.db.Close())
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
	err := q.group.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketContainers)
		b.FillPercent = appendFill
		var buf []byte // values stay valid until commit: not reused
		for _, c := range recs {
			start := len(buf)
			var err error
			if buf, err = appendContainer(buf, c); err != nil {
				return fmt.Errorf("encode container %s: %w", c.ID, err)
			}
			if err := b.Put(containerKey(c.Seq), buf[start:len(buf):len(buf)]); err != nil {
				return err
			}
		}
		eb := tx.Bucket(bucketEvents)
		if _, err := putEvents(eb, events, buf[len(buf):]); err != nil {
			return err
		}
		if q.opts.EventRetention > 0 {
			return pruneEvents(eb, events[len(events)-1].Seq, uint64(q.opts.EventRetention))
		}
		return nil
	})
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
		q.byID[c.ID] = c
		q.countLocked(c)
		c.shape = q.shapeLocked(c.RuntimeConstraints)
		q.markMovedLocked(c)
		out[i] = c.view(Pending{})
	}
	q.addSeqLocked(recs)
	q.gen++
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
		ID: newID(), Name: spec.Name, Command: append([]string(nil), spec.Command...),
		Env: copyMap(spec.Env), Image: spec.Image, RuntimeConstraints: spec.RuntimeConstraints,
		Scheduling: spec.Scheduling, Priority: prio, State: Queued,
		MaxAttempts: maxAttempts, RestartPolicy: policy,
		CreatedAt: now, FirstSeenAt: now, Seq: seq,
	}
	// The record must not share maps with the caller's spec.
	c.Labels = copyMap(spec.Labels)
	c.Scheduling.Constraints = copyMap(spec.Scheduling.Constraints)
	// The record says what was decided: preemptible or not, and the
	// health check's effective settings.
	pre := q.opts.DefaultPreemptible
	if spec.Scheduling.Preemptible != nil {
		pre = *spec.Scheduling.Preemptible
	}
	c.Scheduling.Preemptible = &pre
	c.HealthCheck = healthWithDefaults(spec.HealthCheck)
	c.setHints()
	if c.Name == "" {
		c.Name = c.ID
	}
	return c
}

// Get returns a copy of one container.
func (q *Queue) Get(id string) (view.Container, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, ok := q.byID[id]
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
	return len(q.byID), len(q.byID) - q.finalLocked()
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
	q.mu.Lock()
	for i, id := range ids {
		_, known[i] = q.byID[id]
		someKnown = someKnown || known[i]
	}
	q.mu.Unlock()
	if !someKnown {
		return nil // all dropped (keep_finished) before their output arrived
	}
	err := q.group.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for i, id := range ids {
			if !known[i] {
				continue
			}
			if err := b.Put([]byte(id), outputs[i]); err != nil {
				return err
			}
		}
		return nil
	})
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
	c, ok := q.byID[id]
	if !ok || !set(c) {
		return false
	}
	q.gen++
	q.markDirtyLocked(c)
	q.notifyLocked()
	return true
}

// StoredLogs returns the output kept by StoreLogsBatch, if any.
func (q *Queue) StoredLogs(id string) ([]byte, bool, error) {
	var out []byte
	found := false
	err := q.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketLogs).Get([]byte(id)); v != nil {
			out = append([]byte(nil), v...)
			found = true
		}
		return nil
	})
	return out, found, err
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
	var out []Event
	err := q.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = readEvents(tx.Bucket(bucketEvents), since, limit)
		return err
	})
	return out, err
}

// dropFinishedLocked removes from memory the final containers beyond
// KeepFinished (those that ended first, at most pruneBatch) and returns them
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
	n := min(len(q.finished)-q.opts.KeepFinished, pruneBatch)
	if n <= 0 {
		return nil
	}
	drop := slices.Clone(q.finished[:n])
	q.finished = slices.Delete(q.finished, 0, n)
	for _, c := range drop {
		delete(q.byID, c.ID)
		q.uncountLocked(c)
	}
	q.removeSeqLocked(drop)
	q.gen++
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
		q.byID[c.ID] = c
		q.countLocked(c)
	}
	for _, c := range drop { // oldest ended first: not in Seq order
		q.addSeqLocked([]*Container{c})
	}
	q.finished = append(drop, q.finished...)
}

// initialMmap is the store's first memory map. bbolt maps the file anew
// whenever it outgrows the map (doubling up to 1 GiB), and a remap first
// copies out every node the write transaction holds — inside a fold, the
// whole containers bucket (~170 ms at 150,000 records) — while readers
// wait. Mapping 1 GiB from the start costs address space only (the pages
// are the file's, read on demand), so a store below that never remaps.
const initialMmap = 1 << 30

// pruneBatch bounds the events one flush deletes, so that turning
// retention on for a large log spreads the work over many passes.
const pruneBatch = 10000
