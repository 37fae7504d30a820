package queue

import (
	"flag"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/view"
)

var markBenchN = flag.Int("mark-bench", 300_000, "containers BenchmarkMarkQueue queues")

// BenchmarkMarkQueue is one collection of a queue of -mark-bench waiting
// containers submitted as the acceptance's churn queues them (BENCHMARKS.md,
// docs/design.md §9.1), as submitted and after every one's priority was
// changed once by the churn: what every cycle of the collector marks,
// however it was triggered. cpu-ns/gc is the process's CPU for the cycle
// (every mark worker's).
func BenchmarkMarkQueue(b *testing.B) {
	n := *markBenchN
	path := filepath.Join(b.TempDir(), "queue.db")
	q, _, err := openOn(Options{Clock: clock.NewFake(t0)}, boltstore.Options{Path: path, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	specs := make([]Spec, 5000)
	for done := 0; done < n; done += len(specs) {
		for i := range specs {
			specs[i] = Spec{Name: "q", Command: []string{"true"}, Labels: map[string]string{"pct": strconv.Itoa((done + i) % 100)},
				RuntimeConstraints: Constraints{VCPUs: 1, RAM: 1 << 29}}
		}
		if _, err := q.SubmitBatch(specs[:min(len(specs), n-done)], "bench"); err != nil {
			b.Fatal(err)
		}
	}
	if err := q.Pass(noChangePass); err != nil { // sorted, as a daemon's queue is
		b.Fatal(err)
	}
	b.Run("submitted", func(b *testing.B) { benchCollect(b, q) })
	// The churn's full cycle: every container's priority changed once, a
	// label (1 %) a round, 5,000 a request, with a pass after each round,
	// so the order and the change log are as the churn leaves them.
	for r := range 100 {
		var ids []string
		for _, c := range q.bySeq {
			if c.Labels["pct"] == strconv.Itoa(r) {
				ids = append(ids, c.ID)
			}
		}
		for len(ids) > 0 {
			k := min(5000, len(ids))
			if _, err := q.Bulk(ids[:k], BulkVerb{Verb: view.ContainerPriority, Priority: 1000 + r, Actor: "bench"}); err != nil {
				b.Fatal(err)
			}
			ids = ids[k:]
		}
		if err := q.Pass(noChangePass); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("churned", func(b *testing.B) { benchCollect(b, q) })
}

// benchCollect reports the CPU of a collection of q's heap.
func benchCollect(b *testing.B, q *Queue) {
	runtime.GC()
	var cpu time.Duration
	for b.Loop() {
		c0 := rusageCPU(b)
		runtime.GC()
		cpu += rusageCPU(b) - c0
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/gc")
	runtime.KeepAlive(q)
}

// rusageCPU is the CPU (user and system, every thread) this process has used.
func rusageCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
