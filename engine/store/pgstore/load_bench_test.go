package pgstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/view"
)

// BenchmarkOpenQueue times a start-up on PostgreSQL: a queue opened on a
// store of 100,000 and of 1,000,000 containers (every record loaded and
// decoded, the index built), until the engine could run its first pass.
// The store is filled once per size, in submits of 50,000. Besides the
// wall time it reports the CPU of the test process and of the server per
// open, steadier on a shared machine.
func BenchmarkOpenQueue(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) { benchOpenQueue(b, n) })
	}
}

func benchOpenQueue(b *testing.B, n int) {
	url := pgtest.NewDatabase(b)
	s, err := Open(Options{URL: url, Timeout: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	const chunk = 50_000
	for from := 0; from < n; from += chunk {
		var batch store.Batch
		for seq := uint64(from); seq < uint64(min(from+chunk, n)); seq++ {
			batch.EndRecord(append(batch.BeginRecord(seq), benchRecord(b, seq)...))
		}
		if err := s.Submit(&batch); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	m := pgtest.Start(b).NewMeter(b)
	for b.Loop() {
		s, err := Open(Options{URL: url, Timeout: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		q, err := queue.Open(queue.Options{Store: s, Clock: clock.NewFake(time.Unix(0, 0))})
		if err != nil {
			b.Fatal(err)
		}
		if total, _ := q.Len(); total != n {
			b.Fatalf("loaded %d containers, want %d", total, n)
		}
		b.StopTimer()
		q.Close()
		b.StartTimer()
	}
	m.Report(b)
}

// benchRecord is container seq's record as the queue writes it: Queued,
// of one of 8 × 16 shapes and 5 priorities.
func benchRecord(b *testing.B, seq uint64) []byte {
	c := queue.Container{
		ContainerBody: view.ContainerBody{
			ID:            fmt.Sprintf("c-%016x", seq),
			Name:          fmt.Sprint("job-", seq),
			Command:       []string{"run", "job"},
			MaxAttempts:   3,
			RestartPolicy: queue.RestartNever,
			CreatedAt:     time.Unix(int64(seq), 0).UTC(),
		},
		RuntimeConstraints: queue.Constraints{VCPUs: 1 + int(seq%8), RAM: int64(1+seq%16) << 30},
		Priority:           int(seq % 5),
		State:              queue.Queued,
		FirstSeenAt:        time.Unix(int64(seq), 0).UTC(),
		ContainerTail: view.ContainerTail{
			Seq: seq,
		},
	}
	j, err := json.Marshal(&c)
	if err != nil {
		b.Fatal(err)
	}
	return j
}
