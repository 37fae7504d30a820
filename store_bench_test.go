// The time of `store copy` from an embedded store of 100,000 containers
// into PostgreSQL, verified (BENCHMARKS.md).

package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store/boltstore"
)

// BenchmarkStoreCopy copies an embedded store of 100,000 containers (with
// their submit events; a tenth of them finished with a line of stored
// output) into an empty database each iteration: read, one transaction,
// both sides read back and compared. It reports the CPU of the test
// process and of the server per copy too (steadier on a shared machine;
// the server's includes creating each empty database).
func BenchmarkStoreCopy(b *testing.B) {
	const n, batch = 100_000, 5_000
	dir := b.TempDir()
	st, err := boltstore.Open(boltstore.Options{Path: filepath.Join(dir, engine.StoreFile), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	q, err := queue.Open(queue.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	var finished []string
	for from := 0; from < n; from += batch {
		specs := make([]queue.Spec, batch)
		for i := range specs {
			specs[i] = queue.Spec{Name: fmt.Sprint("job-", from+i), Command: []string{"run", "job", fmt.Sprint(from + i)}}
		}
		cs, err := q.SubmitBatch(specs, "bench")
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(cs); i += 10 {
			finished = append(finished, cs[i].ID)
		}
	}
	if err := q.Pass(func(tx *queue.Tx) {
		for _, id := range finished {
			c := tx.Get(id)
			if tx.Lock(c, "small") != nil || tx.Run(c, "i-1", "small") != nil || tx.Finish(c, 0, tx.Now()) != nil {
				b.Error("could not finish", id)
				return
			}
		}
	}); err != nil {
		b.Fatal(err)
	}
	outputs := make([][]byte, len(finished))
	for i, id := range finished {
		outputs[i] = []byte("done " + id + "\n")
	}
	if err := q.StoreLogsBatch(finished, outputs); err != nil {
		b.Fatal(err)
	}
	if err := q.Close(); err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprintf("copied %d containers, ", n)
	m := pgtest.Start(b).NewMeter(b)
	for b.Loop() {
		b.StopTimer()
		url := pgtest.NewDatabase(b)
		b.StartTimer()
		var out bytes.Buffer
		if err := storeCopy(dir, url, &out); err != nil {
			b.Fatal(err)
		}
		if s := out.String(); !strings.HasPrefix(s, want) || !strings.Contains(s, "; verified") {
			b.Fatalf("store copy said %q; want %q…, verified", s, want)
		}
	}
	m.Report(b)
}
