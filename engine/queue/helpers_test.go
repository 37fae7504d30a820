package queue

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/view"
)

// t0 is the fake clock's start. Every time in these tests is derived from it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is one queue on a real bbolt file in a temporary directory, driven by
// a fake clock. It can be closed and reopened on the same file.
type env struct {
	tb    testing.TB
	opts  Options
	sopts boltstore.Options
	clk   *clock.Fake
	q     *Queue
	store *boltstore.Store // q's
	// writes counts the flushes that wrote records (counting).
	writes atomic.Int64
	// wrap, if set, wraps the store of every later open.
	wrap func(store.Store) store.Store
}

// envOptions are a queue's options and its store's.
type envOptions struct {
	Options
	Store boltstore.Options
}

// newEnv opens a fresh queue. mod may adjust the options before opening.
func newEnv(tb testing.TB, mod func(*envOptions)) *env {
	tb.Helper()
	clk := clock.NewFake(t0)
	opts := envOptions{
		Options: Options{
			Clock:              clk,
			DefaultMaxAttempts: 3,
			EventsInMemory:     100,
		},
		// A directory that does not exist yet: Open must create it.
		Store: boltstore.Options{Path: filepath.Join(tb.TempDir(), "state", "queue.db")},
	}
	if mod != nil {
		mod(&opts)
	}
	e := &env{tb: tb, opts: opts.Options, sopts: opts.Store, clk: clk}
	e.q = e.open()
	tb.Cleanup(func() {
		if e.q != nil {
			if err := e.q.Close(); err != nil {
				tb.Errorf("close: %v", err)
			}
		}
	})
	return e
}

func (e *env) open() *Queue {
	e.tb.Helper()
	s, err := boltstore.Open(e.sopts)
	if err != nil {
		e.tb.Fatalf("open %s: %v", e.sopts.Path, err)
	}
	opts := e.opts
	opts.Store = counting{Store: s, writes: &e.writes}
	if e.wrap != nil {
		opts.Store = e.wrap(opts.Store)
	}
	q, err := Open(opts)
	if err != nil {
		e.tb.Fatalf("open %s: %v", e.sopts.Path, err)
	}
	e.store = s
	return q
}

// openOnPath opens a queue on the bbolt file at path, on a fake clock.
func openOnPath(path string) (*Queue, error) {
	q, _, err := openOn(Options{Clock: clock.NewFake(t0)}, boltstore.Options{Path: path})
	return q, err
}

// counting is a store that counts the flushes that write records.
type counting struct {
	store.Store
	writes *atomic.Int64
}

func (c counting) Flush(b *store.Batch) error {
	if _, n := b.Entries(); n > 0 {
		c.writes.Add(1)
	}
	return c.Store.Flush(b)
}

// openOn opens a queue with opts on a bbolt store opened with sopts.
func openOn(opts Options, sopts boltstore.Options) (*Queue, *boltstore.Store, error) {
	s, err := boltstore.Open(sopts)
	if err != nil {
		return nil, nil, err
	}
	opts.Store = s
	q, err := Open(opts)
	return q, s, err
}

// close closes the queue; the env can be reopened.
func (e *env) close() {
	e.tb.Helper()
	if err := e.q.Close(); err != nil {
		e.tb.Fatalf("close: %v", err)
	}
	e.q = nil
}

// reopen closes the queue and opens the same file again.
func (e *env) reopen() *Queue {
	e.tb.Helper()
	if e.q != nil {
		e.close()
	}
	e.q = e.open()
	return e.q
}

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

func spec(cmd ...string) Spec { return Spec{Command: cmd} }

func (e *env) submit(s Spec) view.Container {
	e.tb.Helper()
	c, err := e.q.Submit(s, "operator:test")
	if err != nil {
		e.tb.Fatalf("submit %+v: %v", s, err)
	}
	return c
}

// pass runs one scheduler pass and fails the test on a flush error. fn may
// call t.Fatal: Pass then never unlocks the queue, so this does, and the
// test fails instead of hanging in its cleanup.
func (e *env) pass(fn func(tx *Tx)) {
	e.tb.Helper()
	inFn := false
	defer func() {
		if inFn {
			e.q.mu.Unlock()
		}
	}()
	err := e.q.Pass(func(tx *Tx) {
		inFn = true
		fn(tx)
		inFn = false
	})
	if err != nil {
		e.tb.Fatalf("pass: %v", err)
	}
}

// toggleLock locks a Queued container or unlocks a Locked one: a change
// that makes the pass write the record.
func toggleLock(tb testing.TB, tx *Tx, c *Container) {
	tb.Helper()
	var err error
	if c.State == Queued {
		err = tx.Lock(c, "small")
	} else {
		err = tx.Unlock(c)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// txDo runs fn on container id inside one pass and returns fn's error.
func (e *env) txDo(id string, fn func(tx *Tx, c *Container) error) error {
	e.tb.Helper()
	var err error
	e.pass(func(tx *Tx) {
		c := tx.Get(id)
		if c == nil {
			e.tb.Fatalf("tx.Get(%s) = nil", id)
		}
		err = fn(tx, c)
	})
	return err
}

// mustTx is txDo that fails the test on an error.
func (e *env) mustTx(id string, fn func(tx *Tx, c *Container) error) {
	e.tb.Helper()
	if err := e.txDo(id, fn); err != nil {
		e.tb.Fatalf("tx on %s: %v", id, err)
	}
}

func (e *env) get(id string) view.Container {
	e.tb.Helper()
	c, ok := e.q.Get(id)
	if !ok {
		e.tb.Fatalf("Get(%s): not found", id)
	}
	return c
}

// events returns every event, oldest first.
func (e *env) events() []Event {
	e.tb.Helper()
	evs, err := e.q.Events(0, 1<<30)
	if err != nil {
		e.tb.Fatalf("events: %v", err)
	}
	return evs
}

// lastEvent returns the newest event.
func (e *env) lastEvent() Event {
	e.tb.Helper()
	evs := e.events()
	if len(evs) == 0 {
		e.tb.Fatalf("no events")
	}
	return evs[len(evs)-1]
}

// snapshot returns a copy of every record by id.
func (e *env) snapshot() map[string]view.Container {
	var cs []*Container
	e.q.Each(func(c *Container) bool {
		cs = append(cs, c)
		return true
	})
	out := map[string]view.Container{}
	for _, v := range e.q.Views(cs) {
		out[v.ID] = v
	}
	return out
}

// activeIDs returns the ids Tx.Active lists at the start of a pass.
func (e *env) activeIDs() []string {
	e.tb.Helper()
	var ids []string
	e.pass(func(tx *Tx) {
		for _, c := range tx.Active() {
			ids = append(ids, c.ID)
		}
	})
	return ids
}

// held is what a store holds, as a start-up loads it.
type held struct {
	records map[uint64][]byte // by Seq
	ids     []string          // the records' ids, in Seq order
	events  []storedEvent     // oldest first
	paused  bool
}

// storedEvent is one event as stored: its JSON and what it decodes to.
type storedEvent struct {
	seq   uint64
	json  []byte
	event Event
}

// load reads everything st holds, through the store interface.
func load(tb testing.TB, st store.Store) held {
	tb.Helper()
	h := held{records: map[uint64][]byte{}}
	var seqs []uint64
	byseq := map[uint64]string{}
	loaded, err := st.Load(1<<30, store.RecordFunc(func(body []byte) (uint64, string, error) {
		var c Container
		if err := json.Unmarshal(body, &c); err != nil {
			return 0, "", err
		}
		h.records[c.Seq] = slices.Clone(body)
		seqs = append(seqs, c.Seq)
		byseq[c.Seq] = c.ID
		return c.Seq, c.ID, nil
	}), func(seq uint64, body []byte) error {
		ev, err := decodeEvent(seq, body)
		h.events = append(h.events, storedEvent{seq: seq, json: slices.Clone(body), event: ev})
		return err
	})
	if err != nil {
		tb.Fatalf("load the store: %v", err)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		h.ids = append(h.ids, byseq[seq])
	}
	h.paused = loaded.Paused
	return h
}

// held is what the env's store holds now: the open one re-read, or the
// file opened anew while the queue is closed.
func (e *env) held() held {
	e.tb.Helper()
	if e.q != nil {
		return load(e.tb, e.store)
	}
	s, err := boltstore.Open(e.sopts)
	if err != nil {
		e.tb.Fatal(err)
	}
	defer s.Close()
	return load(e.tb, s)
}

// putRecord stores body as container seq's record in the closed queue's
// store, as an older version may have written it.
func (e *env) putRecord(seq uint64, body []byte) {
	e.tb.Helper()
	s, err := boltstore.Open(e.sopts)
	if err != nil {
		e.tb.Fatal(err)
	}
	defer s.Close()
	load(e.tb, s)
	var b store.Batch
	buf := append(b.BeginRecord(seq), body...)
	b.EndRecord(buf)
	if err := s.Flush(&b); err != nil {
		e.tb.Fatal(err)
	}
}

// toState drives a freshly submitted (Queued) container to state s through
// the Tx methods.
func (e *env) toState(id string, s State) {
	e.tb.Helper()
	switch s {
	case Queued:
	case Locked:
		e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Lock(c, "small") })
	case Running:
		e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Run(c, "i-1", "small") })
	case Complete:
		e.toState(id, Running)
		e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Finish(c, 0, e.clk.Now()) })
	case Cancelled:
		e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Cancel(c, ReasonKilled, "test cancel") })
	default:
		e.tb.Fatalf("toState: unknown state %q", s)
	}
	if got := e.get(id).State; got != s {
		e.tb.Fatalf("toState(%s): state %s", s, got)
	}
}

func wantFieldError(tb testing.TB, err error, field string) {
	tb.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		tb.Fatalf("error %v (%T): want *FieldError for %s", err, err, field)
	}
	if fe.Field != field {
		tb.Fatalf("FieldError.Field = %q, want %q (error %q)", fe.Field, field, fe.Error())
	}
}

func wantEqual[T any](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}
