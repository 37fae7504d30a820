// Group commit: writes from many goroutines in shared transactions.

package boltstore

import (
	"errors"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// groupCommit runs writes from many goroutines in shared transactions: a
// writer that finds no commit under way commits at once; writers that
// arrive meanwhile queue, and the next commit takes them all. Under load a
// commit (two fdatasyncs) serves as many writers as arrived during the
// last one; alone, a writer waits for nothing. (bbolt's Batch instead
// commits whatever arrived within a fixed delay, which at a few hundred
// submits a second meant one or two writers per commit.)
type groupCommit struct {
	db *bolt.DB

	mu         sync.Mutex
	queue      []*groupReq
	committing bool
}

type groupReq struct {
	fn   func(*bolt.Tx) error
	done chan groupResult // buffered: the leader never blocks on it
}

type groupResult struct {
	err  error
	lead bool // not a result: this writer is to commit the queue now
}

// errGroupFailed is what the writers of a shared transaction get when
// another writer's function failed it; each of them retries alone.
var errGroupFailed = errors.New("shared transaction failed")

// write runs fn in a transaction, possibly shared with other writers, and
// returns once it is committed (or failed).
func (g *groupCommit) write(fn func(*bolt.Tx) error) error {
	req := &groupReq{fn: fn, done: make(chan groupResult, 2)}
	g.mu.Lock()
	g.queue = append(g.queue, req)
	if !g.committing {
		g.committing = true
		req.done <- groupResult{lead: true}
	}
	g.mu.Unlock()
	for {
		res := <-req.done
		if !res.lead {
			if errors.Is(res.err, errGroupFailed) {
				return g.db.Update(fn)
			}
			return res.err
		}
		g.commitQueued()
	}
}

// commitQueued commits every queued writer in one transaction, then hands
// the lead to the first writer that queued meanwhile, if any.
func (g *groupCommit) commitQueued() {
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	failed := -1
	err := g.db.Update(func(tx *bolt.Tx) error {
		for i, r := range batch {
			if err := r.fn(tx); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	for i, r := range batch {
		switch {
		case err == nil || len(batch) == 1 || i == failed:
			r.done <- groupResult{err: err}
		default:
			// Another writer's function failed the transaction (or
			// the commit failed): retry alone, as bbolt's Batch does.
			r.done <- groupResult{err: errGroupFailed}
		}
	}

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].done <- groupResult{lead: true}
	} else {
		g.committing = false
	}
	g.mu.Unlock()
}
