// The test env: a queue (engine/queue) on a Store in a temporary
// directory, driven by a fake clock, closed, crashed and reopened on the
// same file.

package boltstore

import (
	"dispatch-tui/engine/view"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
)

// t0 is the fake clock's start.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	tb    testing.TB
	opts  queue.Options
	sopts Options
	clk   *clock.Fake
	q     *queue.Queue
	s     *Store // q's
	// loaded is what the last open loaded: the events handed to the
	// queue, oldest first, and the next event's Seq.
	loaded     []queue.Event
	loadedNext uint64
	// foldSteps is how many of a fold's transactions the store runs
	// after each flush when it folds by hand (Options.FoldByHand).
	foldSteps int
}

// envOptions are the queue's options and its store's.
type envOptions struct {
	queue.Options
	Store Options
}

func newEnv(tb testing.TB, mod func(*envOptions)) *env {
	tb.Helper()
	clk := clock.NewFake(t0)
	o := envOptions{
		Options: queue.Options{Clock: clk, DefaultMaxAttempts: 3, EventsInMemory: 100},
		Store:   Options{Path: filepath.Join(tb.TempDir(), "state", "queue.db")},
	}
	if mod != nil {
		mod(&o)
	}
	e := &env{tb: tb, opts: o.Options, sopts: o.Store, clk: clk}
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

// open opens the store and a queue on it, keeping what the store loaded.
func (e *env) open() *queue.Queue {
	e.tb.Helper()
	s, err := Open(e.sopts)
	if err != nil {
		e.tb.Fatalf("open %s: %v", e.sopts.Path, err)
	}
	e.s = s
	opts := e.opts
	opts.Store = recorder{s, e}
	q, err := queue.Open(opts)
	if err != nil {
		e.tb.Fatalf("open the queue on %s: %v", e.sopts.Path, err)
	}
	return q
}

// recorder is a Store that keeps in its env what Load handed out.
type recorder struct {
	*Store
	e *env
}

// Flush is the store's, then up to foldSteps transactions of a fold in
// progress when the store folds by hand: the folder's work, at points the
// test chooses.
func (r recorder) Flush(b *store.Batch) error {
	if err := r.Store.Flush(b); err != nil {
		return err
	}
	for i := 0; i < r.e.foldSteps && r.Store.foldStep(); i++ {
	}
	return nil
}

func (r recorder) Load(n int, recs store.Records, ev func(uint64, []byte) error) (loaded store.Loaded, err error) {
	r.e.loaded = nil
	loaded, err = r.Store.Load(n, recs, func(seq uint64, j []byte) error {
		var x queue.Event
		if err := json.Unmarshal(j, &x); err != nil {
			return err
		}
		r.e.loaded = append(r.e.loaded, x)
		return ev(seq, j)
	})
	r.e.loadedNext = loaded.NextEvent
	return loaded, err
}

func (e *env) close() {
	e.tb.Helper()
	if err := e.q.Close(); err != nil {
		e.tb.Fatalf("close: %v", err)
	}
	e.q = nil
}

func (e *env) reopen() *queue.Queue {
	e.tb.Helper()
	if e.q != nil {
		e.close()
	}
	e.q = e.open()
	return e.q
}

// crash closes the file after a flush without folding the journal, as a
// process that dies after its last commit leaves it.
func (e *env) crash() {
	e.tb.Helper()
	if err := e.q.Flush(); err != nil {
		e.tb.Fatalf("flush: %v", err)
	}
	e.s.stopFolder()
	if err := e.s.db.Close(); err != nil {
		e.tb.Fatalf("close the file: %v", err)
	}
	e.q = nil
}

func (e *env) submit(s queue.Spec) view.Container {
	e.tb.Helper()
	c, err := e.q.Submit(s, "operator:test")
	if err != nil {
		e.tb.Fatalf("submit %+v: %v", s, err)
	}
	return c
}

// submitN submits n containers running "true" in one batch.
func (e *env) submitN(n int) []view.Container {
	e.tb.Helper()
	specs := make([]queue.Spec, n)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}}
	}
	cs, err := e.q.SubmitBatch(specs, "test")
	if err != nil {
		e.tb.Fatal(err)
	}
	return cs
}

func (e *env) pass(fn func(tx *queue.Tx)) {
	e.tb.Helper()
	if err := e.q.Pass(fn); err != nil {
		e.tb.Fatalf("pass: %v", err)
	}
}

// reprioritise sets the priority of the containers ids to prio in one
// bulk verb: one flush, one journal batch.
func (e *env) reprioritise(prio int, ids ...string) {
	e.tb.Helper()
	if _, err := e.q.Bulk(ids, queue.BulkVerb{Verb: view.ContainerPriority, Priority: prio, Actor: "test"}); err != nil {
		e.tb.Fatal(err)
	}
}

// toggleLock locks a Queued container or unlocks a Locked one.
func toggleLock(tb testing.TB, tx *queue.Tx, c *queue.Container) {
	tb.Helper()
	var err error
	if c.State == queue.Queued {
		err = tx.Lock(c, "small")
	} else {
		err = tx.Unlock(c)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// events returns every event, oldest first.
func (e *env) events() []queue.Event {
	e.tb.Helper()
	evs, err := e.q.Events(0, 1<<30)
	if err != nil {
		e.tb.Fatalf("events: %v", err)
	}
	return evs
}

func (e *env) lastEvent() queue.Event {
	e.tb.Helper()
	evs := e.events()
	if len(evs) == 0 {
		e.tb.Fatalf("no events")
	}
	return evs[len(evs)-1]
}

// snapshot returns a copy of every record by id.
func (e *env) snapshot() map[string]view.Container {
	var cs []*queue.Container
	e.q.Each(func(c *queue.Container) bool {
		cs = append(cs, c)
		return true
	})
	out := map[string]view.Container{}
	for _, v := range e.q.Views(cs) {
		out[v.ID] = v
	}
	return out
}

func wantEqual[T any](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// fileContainerKeys lists the ids of the containers in the (closed) file's
// containers bucket, checking each is keyed by its Seq.
func fileContainerKeys(tb testing.TB, path string) []string {
	tb.Helper()
	var keys []string
	viewFile(tb, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketContainers).ForEach(func(k, v []byte) error {
			var c queue.Container
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
	return keys
}

// viewFile runs fn in a read transaction on the (closed) file at path.
func viewFile(tb testing.TB, path string, fn func(tx *bolt.Tx) error) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatalf("open %s read-only: %v", path, err)
	}
	defer db.Close()
	if err := db.View(fn); err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
}

// updateFile runs fn in one write transaction on the (closed) file at
// path, created if need be.
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
