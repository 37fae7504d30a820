package boltstore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/queue"
)

// A store written when containers were keyed by id loads the same and is
// rewritten with sequence keys.
func TestLoadMigratesIDKeyedStore(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for _, c := range e.submitN(5) {
		ids = append(ids, c.ID)
	}
	e.pass(func(tx *queue.Tx) { toggleLock(t, tx, tx.Get(ids[1])) })
	if _, err := e.q.Kill(ids[2], "operator:bob", "stop it"); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot()
	e.close()
	updateFile(t, e.sopts.Path, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketContainers)
		type kv struct{ k, v []byte }
		var all []kv
		b.ForEach(func(k, v []byte) error {
			all = append(all, kv{slices.Clone(k), slices.Clone(v)})
			return nil
		})
		for _, r := range all {
			var c queue.Container
			if err := json.Unmarshal(r.v, &c); err != nil {
				return err
			}
			if err := b.Delete(r.k); err != nil {
				return err
			}
			if err := b.Put([]byte(c.ID), r.v); err != nil {
				return err
			}
		}
		return nil
	})
	e.reopen()
	wantEqual(t, "snapshot", e.snapshot(), before)
	e.close()
	got := fileContainerKeys(t, e.sopts.Path) // checks each is keyed by seq
	slices.Sort(got)
	slices.Sort(ids)
	wantEqual(t, "stored ids", got, ids)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	// A file that is not a bbolt database.
	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, []byte(strings.Repeat("x", 8192)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(Options{Path: corrupt}); err == nil {
		s.Close()
		t.Fatal("Open of a corrupt file succeeded")
	}
	// A state directory that cannot be created.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(Options{Path: filepath.Join(file, "sub", "queue.db")}); err == nil {
		s.Close()
		t.Fatal("Open under a regular file succeeded")
	} else if !strings.Contains(err.Error(), "state directory") {
		t.Fatalf("error %q does not mention the state directory", err)
	}
}
