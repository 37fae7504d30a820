package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/enginetest/wait"
)

func openGroup(t *testing.T) *groupCommit {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	return &groupCommit{db: db}
}

func put(key string, txID *int) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		*txID = tx.ID()
		return tx.Bucket([]byte("b")).Put([]byte(key), []byte("v"))
	}
}

// TestGroupCommitSharesATransaction holds a commit open while writers queue:
// they all go into the next transaction, except one whose function fails,
// which gets its own error while the others are retried and stored.
func TestGroupCommitSharesATransaction(t *testing.T) {
	g := openGroup(t)
	release := make(chan struct{})
	entered := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- g.write(func(tx *bolt.Tx) error {
			close(entered)
			<-release
			return tx.Bucket([]byte("b")).Put([]byte("first"), []byte("v"))
		})
	}()
	<-entered
	const n = 10
	txIDs := make([]int, n)
	errs := make([]error, n)
	boom := errors.New("boom")
	var wg sync.WaitGroup
	waitQueued := func(want int) {
		deadline := time.Now().Add(wait.Budget(5 * time.Second))
		for {
			g.mu.Lock()
			got := len(g.queue)
			g.mu.Unlock()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d writers queued, want %d", got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range n {
		wg.Go(func() {
			fn := put(fmt.Sprint("k", i), &txIDs[i])
			if i == 3 {
				fn = func(*bolt.Tx) error { return boom }
			}
			errs[i] = g.write(fn)
		})
	}
	waitQueued(n)
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if i == 3 {
			if !errors.Is(err, boom) {
				t.Fatalf("failing writer got %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	// The others were retried alone after the shared transaction failed;
	// without a failure they share one: check that with a second round.
	if err := g.db.View(func(tx *bolt.Tx) error {
		for i := range n {
			if got := tx.Bucket([]byte("b")).Get([]byte(fmt.Sprint("k", i))); (got != nil) != (i != 3) {
				return fmt.Errorf("k%d stored: %v", i, got != nil)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	release2 := make(chan struct{})
	entered2 := make(chan struct{})
	go g.write(func(tx *bolt.Tx) error { close(entered2); <-release2; return nil })
	<-entered2
	for i := range n {
		wg.Go(func() { errs[i] = g.write(put(fmt.Sprint("j", i), &txIDs[i])) })
	}
	waitQueued(n)
	close(release2)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || txIDs[i] != txIDs[0] {
			t.Fatalf("writer %d: err %v, transaction %d (first writer's: %d)", i, errs[i], txIDs[i], txIDs[0])
		}
	}
}

// TestGroupCommitAlone: a writer with no one else commits at once.
func TestGroupCommitAlone(t *testing.T) {
	g := openGroup(t)
	var id1, id2 int
	if err := g.write(put("a", &id1)); err != nil {
		t.Fatal(err)
	}
	if err := g.write(put("b", &id2)); err != nil {
		t.Fatal(err)
	}
	if id1 == id2 {
		t.Fatalf("two writes one after the other shared transaction %d", id1)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.committing || len(g.queue) != 0 {
		t.Fatalf("left committing=%v with %d queued", g.committing, len(g.queue))
	}
}
