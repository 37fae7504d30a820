package queue

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/view"
)

// t0 is the fake clock's start. Every time in these tests is derived from it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is one queue on a real bbolt file in a temporary directory, driven by
// a fake clock. It can be closed and reopened on the same file.
type env struct {
	tb   testing.TB
	opts Options
	clk  *clock.Fake
	q    *Queue
}

// newEnv opens a fresh queue. mod may adjust the options before opening.
func newEnv(tb testing.TB, mod func(*Options)) *env {
	tb.Helper()
	clk := clock.NewFake(t0)
	opts := Options{
		// A directory that does not exist yet: Open must create it.
		Path:               filepath.Join(tb.TempDir(), "state", "queue.db"),
		Clock:              clk,
		DefaultMaxAttempts: 3,
		EventsInMemory:     100,
	}
	if mod != nil {
		mod(&opts)
	}
	e := &env{tb: tb, opts: opts, clk: clk}
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
	q, err := Open(e.opts)
	if err != nil {
		e.tb.Fatalf("open %s: %v", e.opts.Path, err)
	}
	return q
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

// fileContainerKeys lists the ids of the containers stored in the bbolt file
// (checking each is keyed by its seq). The
// queue must be closed.
func fileContainerKeys(tb testing.TB, path string) []string {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatalf("open %s read-only: %v", path, err)
	}
	defer db.Close()
	var keys []string
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketContainers)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var c Container
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			if string(k) != string(containerKey(c.Seq)) {
				tb.Errorf("container %s stored under key %x, want its seq %d", c.ID, k, c.Seq)
			}
			keys = append(keys, c.ID)
			return nil
		})
	})
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return keys
}

// storedRecord is the stored JSON of the container with sequence number
// seq as a reader of the open store sees it: the journal's latest entry for
// it, else the containers bucket's record (nil if dropped or absent).
func storedRecord(tx *bolt.Tx, seq uint64) []byte {
	jb := tx.Bucket(bucketJournal)
	var entries []journalEntry
	cur := jb.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		var err error
		if entries, err = appendJournalValue(entries, jb, k, v); err != nil {
			panic(err)
		}
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].seq == seq {
			return entries[i].body
		}
	}
	return tx.Bucket(bucketContainers).Get(containerKey(seq))
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

// updateFile runs fn in one write transaction on the store file at path,
// which no queue has open (the file is created if need be).
func updateFile(tb testing.TB, path string, fn func(tx *bolt.Tx) error) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		tb.Fatal(err)
	}
}
