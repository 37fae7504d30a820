package boltstore

import (
	"flag"
	"testing"
	"time"

	"dispatch-tui/engine/store"
)

var (
	foldBenchN     = flag.Int("fold-bench", 300_000, "containers BenchmarkFlushFoldInPlace stores")
	foldBenchAfter = flag.Int("fold-bench.after", 0, "entries beyond the window before a fold (0: the store's default)")
)

// BenchmarkFlushFoldInPlace is the bulk priority verb's flush under the
// acceptance's churn (BENCHMARKS.md: 1 % of the queue a second, by label, 5,000
// records a request) in a store above the rebuild limit, which folds its
// journal's oldest entries in place (journal.go): the records of one round
// are every 100th by Seq, scattered over the file. After each flush the
// fold in progress, if any, is run to its end, as the folder would
// (folder.go). Reported per record changed: the CPU of the flushes and
// folds (the process's, the collector's included), and the pages their
// transactions wrote and the nodes they read (bbolt's TxStats); and the
// slowest flush's wall time, the fold's left out (what a verb waits).
func BenchmarkFlushFoldInPlace(b *testing.B) {
	n := *foldBenchN
	s := openSeeded(b, n)
	s.stopFolder()            // the benchmark runs the folder's steps itself
	s.opts.RebuildMax = n / 2 // folds in place, as a million's store does
	s.opts.FoldAfter = *foldBenchAfter
	const perFlush = 5000
	bodies := make([][]byte, n)
	for seq := range bodies {
		bodies[seq] = appendSeedRecord(b, nil, uint64(seq), 7)
	}
	var batch store.Batch
	next := func(r int) []uint64 {
		var seqs []uint64
		for seq := r % 100; seq < n; seq += 100 {
			seqs = append(seqs, uint64(seq))
		}
		return seqs
	}
	var pending []uint64
	round := 0
	var cpu, longest time.Duration // longest: the slowest flush's wall time
	changed := 0
	st0 := s.db.Stats().TxStats
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if len(pending) == 0 {
			pending = next(round)
			round++
		}
		k := min(perFlush, len(pending))
		batch.Reset()
		batch.Records = n
		batch.Pass = round%2 == 0 // the daemon's passes flush between the churn's requests
		for _, seq := range pending[:k] {
			batch.EndRecord(append(batch.BeginRecord(seq), bodies[seq]...))
		}
		pending = pending[k:]
		b.StartTimer()
		cpu0, wall0 := cpuTime(), time.Now()
		if err := s.Flush(&batch); err != nil {
			b.Fatal(err)
		}
		longest = max(longest, time.Since(wall0))
		for s.foldStep() {
		}
		if s.foldErr != nil {
			b.Fatal(s.foldErr)
		}
		cpu += cpuTime() - cpu0
		changed += k
	}
	st := s.db.Stats().TxStats
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(changed), "cpu-ns/change")
	b.ReportMetric(float64(st.GetWrite()-st0.GetWrite())/float64(changed), "pages/change")
	b.ReportMetric(float64(st.GetNodeCount()-st0.GetNodeCount())/float64(changed), "nodes/change")
	b.ReportMetric(float64(longest.Milliseconds()), "max-flush-ms")
}
