package engine

// The churn of issue 32's acceptance, in process: 1 % of a large queue
// given a new priority by a label selector, 5,000 a request (as POST
// /v1/containers/bulk pages it), and what a single submit waits while it
// goes on (BENCHMARKS.md, helper churn).

import (
	"flag"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

var bulkBenchN = flag.Int("bulk.containers", 300_000, "queued containers of the bulk churn benchmarks")

// bulkGroups is how many values the "pct" label takes: one is 1 %.
const bulkGroups = 100

// newBulkBench is an engine (real bbolt file, synced; no scheduler
// running) with n queued containers labelled pct=i%bulkGroups.
func newBulkBench(b *testing.B, n int) *Engine {
	b.Helper()
	eng := newBenchEngine(b)
	const batch = 10_000
	specs := make([]queue.Spec, batch)
	for done := 0; done < n; done += batch {
		for i := range specs {
			specs[i] = queue.Spec{Name: "q", Command: []string{"true"},
				Labels:             map[string]string{"pct": strconv.Itoa((done + i) % bulkGroups)},
				RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
		}
		if _, err := eng.queue.SubmitBatch(specs[:min(batch, n-done)], "bench"); err != nil {
			b.Fatal(err)
		}
	}
	return eng
}

// churnRound gives 1 % of the queue (pct=r%bulkGroups) the priority
// 1000+r, a page of BulkBatch at a time, and returns how many it changed.
func churnRound(b *testing.B, eng *Engine, r int) int {
	prio := 1000 + r
	req := BulkRequest{Verb: view.ContainerPriority, Priority: &prio, Actor: "bench",
		Filter: &ListOptions{Labels: map[string]string{"pct": strconv.Itoa(r % bulkGroups)}}}
	changed := 0
	for {
		out, err := eng.Bulk(req)
		if err != nil {
			b.Error(err)
			return changed
		}
		changed += len(out.Results)
		if !out.More {
			return changed
		}
		req.From = out.Next
	}
}

// BenchmarkBulkPriorityRound is one round of the churn: 1 % of
// -bulk.containers (300,000 by default) given a new priority by label.
func BenchmarkBulkPriorityRound(b *testing.B) {
	n := *bulkBenchN
	eng := newBulkBench(b, n)
	b.ReportAllocs()
	r, changed := 0, 0
	cpu0 := processCPU(b)
	for b.Loop() {
		changed += churnRound(b, eng, r)
		r++
	}
	b.ReportMetric(float64(changed)/b.Elapsed().Seconds(), "changes/s")
	// The process's CPU (the store's and the collector's included) per
	// change: on a shared box the wall time says more of the load.
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(changed), "cpu-ns/change")
}

// processCPU is the CPU (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSubmitDuringChurn is one submit, and the read of changes that
// first shows it, while a round of the churn starts every second (back to
// back when one takes longer): what an attached console's user waits for
// a CLI submit, the console's own work aside. It reports the time's median
// and 99th percentile, and the 99th of the submit's own part (until Submit
// returns).
func BenchmarkSubmitDuringChurn(b *testing.B) {
	n := *bulkBenchN
	eng := newBulkBench(b, n)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for r := 0; ; r++ {
			churnRound(b, eng, r)
			select {
			case <-stop:
				return
			case <-tick.C: // pacing: 1 % a second, as the acceptance's churn
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	spec := queue.Spec{Name: "late", Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
	since := eng.queue.Generation()
	var took, submitted []time.Duration
	for b.Loop() {
		start := time.Now()
		c, err := eng.Submit(spec, "bench")
		if err != nil {
			b.Fatal(err)
		}
		submitted = append(submitted, time.Since(start))
		// A watcher's reads, in pages as the API's, until the submit's
		// container is among them.
		for seen := false; !seen; {
			ch, err := eng.ContainerChanges(since, 10_000)
			if err != nil {
				b.Fatal(err)
			}
			since = ch.Generation
			seen = slices.ContainsFunc(ch.Items, func(v view.Container) bool { return v.ID == c.ID })
		}
		took = append(took, time.Since(start))
	}
	b.ReportMetric(quantile(took, 0.5), "p50-ns")
	b.ReportMetric(quantile(took, 0.99), "p99-ns")
	b.ReportMetric(quantile(submitted, 0.99), "submit-p99-ns")
}

// quantile is the p-quantile of ds in nanoseconds; it sorts ds.
func quantile(ds []time.Duration, p float64) float64 {
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Nanoseconds())
}

// BenchmarkSelectByLabel is the walk of a bulk request's label selector
// alone (selectIDs): the churn's pct=N over -bulk.containers, a hundredth
// of which match, every container walked a round. It reports the CPU of a
// walk per container walked.
func BenchmarkSelectByLabel(b *testing.B) {
	n := *bulkBenchN
	eng := newBulkBench(b, n)
	r, walked := 0, 0
	cpu0 := processCPU(b)
	for b.Loop() {
		f := ListOptions{Labels: map[string]string{"pct": strconv.Itoa(r % bulkGroups)}}
		matched := 0
		for from, more := uint64(0), true; more; {
			var ids []string
			ids, from, more = eng.selectIDs(f, from, 0)
			matched += len(ids)
		}
		if matched != n/bulkGroups {
			b.Fatalf("round %d selected %d containers, want %d", r, matched, n/bulkGroups)
		}
		walked += n
		r++
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(walked), "cpu-ns/container")
}
