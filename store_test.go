package main

import (
	"bytes"
	"dispatch-tui/engine/view"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/store/pgstore"
)

// TestStoreMigrate: --dry-run lists what a new database lacks and applies
// nothing; migrate applies it; then there is nothing to do. A config
// without a PostgreSQL store is told so.
func TestStoreMigrate(t *testing.T) {
	url := pgtest.NewDatabase(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[store]\nurl = \""+url+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bolt := filepath.Join(dir, "bolt.toml")
	if err := os.WriteFile(bolt, []byte("[dispatcher]\nstate_dir = \""+dir+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DISPATCH_TUI_STORE_URL", "")
	for _, step := range []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{[]string{"store", "migrate", "--dry-run", "--config", cfg}, 0, "would apply migration 1 (init)", ""},
		{[]string{"store", "migrate", "--dry-run", "--config", cfg}, 0, "would apply migration 1 (init)", ""},
		{[]string{"store", "migrate", "--config", cfg}, 0, "applied migration 1 (init)", ""},
		{[]string{"store", "migrate", "--dry-run", "--config", cfg}, 0, "the schema is up to date", ""},
		{[]string{"store", "migrate", "--config", bolt}, 1, "", "the embedded store needs no migration"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(step.args, &stdout, &stderr)
		if code != step.code || !strings.Contains(stdout.String(), step.inStdout) || !strings.Contains(stderr.String(), step.inStderr) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", step.args, code, stdout.String(), stderr.String(), step.code, step.inStdout, step.inStderr)
		}
	}
}

// TestStoreCopy: an embedded store copied into an empty database reads the
// same there (containers, events, output, the pause flag, the cluster id,
// the instances' kept settings), verified; a
// second copy into the now full database is refused and changes nothing.
func TestStoreCopy(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(boltstore.Options{Path: filepath.Join(dir, engine.StoreFile), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.KeepClusterID("dt-c0ffee00"); err != nil {
		t.Fatal(err)
	}
	q, err := queue.Open(queue.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := q.SubmitBatch([]queue.Spec{{Command: []string{"a"}}, {Command: []string{"b"}}, {Command: []string{"c"}}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Pass(func(tx *queue.Tx) {
		c := tx.Get(cs[0].ID)
		if tx.Lock(c, "small") != nil || tx.Run(c, "i-1", "small") != nil || tx.Finish(c, 0, tx.Now()) != nil {
			t.Error("could not finish the first container")
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := q.StoreLogsBatch([]string{cs[0].ID}, [][]byte{[]byte("hello\n")}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetPaused(true, "operator:alice", "moving"); err != nil {
		t.Fatal(err)
	}
	want := snapshotOf(t, q)
	wantEvents, _ := q.Events(0, 1<<20)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	// An instance's kept hold, as the engine's flush writes it.
	st, err = boltstore.Open(boltstore.Options{Path: filepath.Join(dir, engine.StoreFile), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	b.Reset()
	b.Parts = []store.PartWrite{{Name: engine.BehaviorPart, Keys: []string{"i-1"}, Values: [][]byte{[]byte(`{"idle_behavior":"hold"}`)}}}
	if err := st.Flush(&b); err != nil {
		t.Fatal(err)
	}
	st.Close()

	url := pgtest.NewDatabase(t)
	for i, step := range []struct {
		code             int
		inStdout, inErrs string
	}{
		{0, "copied 3 containers, " + fmt.Sprint(len(wantEvents)) + " events, 1 outputs, 1 instance and cost records, cluster id dt-c0ffee00; verified", ""},
		{1, "", "already holds containers"},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"store", "copy", "--from", dir, "--to", url}, &stdout, &stderr)
		if code != step.code || !strings.Contains(stdout.String(), step.inStdout) || !strings.Contains(stderr.String(), step.inErrs) {
			t.Fatalf("copy %d: exit %d, stdout %q, stderr %q", i+1, code, stdout.String(), stderr.String())
		}
	}
	pg, err := pgstore.Open(pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := pg.ClusterID(); id != "dt-c0ffee00" || err != nil {
		t.Fatalf("cluster id in PostgreSQL: %q, %v; want dt-c0ffee00", id, err)
	}
	kept := map[string]string{}
	if err := pg.LoadPart(engine.BehaviorPart, func(k, v []byte) error { kept[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept["i-1"] != `{"idle_behavior":"hold"}` {
		t.Fatalf("instance settings in PostgreSQL: %v; want i-1's hold", kept)
	}
	q, err = queue.Open(queue.Options{Store: pg})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if got := snapshotOf(t, q); !reflect.DeepEqual(got, want) {
		t.Fatalf("containers in PostgreSQL:\n%+v\nwant\n%+v", got, want)
	}
	if got, _ := q.Events(0, 1<<20); !reflect.DeepEqual(got, wantEvents) {
		t.Fatalf("events in PostgreSQL: %d, want %d", len(got), len(wantEvents))
	}
	if out, ok, err := q.StoredLogs(cs[0].ID); !ok || err != nil || string(out) != "hello\n" {
		t.Fatalf("output in PostgreSQL: %q, %v, %v", out, ok, err)
	}
	if !q.Paused() {
		t.Fatal("the pause flag was not copied")
	}
}

// snapshotOf returns a copy of every container of q by id.
func snapshotOf(t *testing.T, q *queue.Queue) map[string]view.Container {
	t.Helper()
	var cs []*queue.Container
	q.Each(func(c *queue.Container) bool { cs = append(cs, c); return true })
	out := map[string]view.Container{}
	for _, c := range q.Views(cs) {
		out[c.ID] = c
	}
	return out
}
