package worker

import (
	"runtime"
	"testing"
)

// BenchmarkProbeRound: what the probes of a quiet pool cost, per probe:
// 1,000 instances on the fake driver, each running one container, all
// probed once a round (the fake clock moved by probe_interval); every
// list is what it was. The fake runner's side (formatting its list) is
// in the figures, as it is in a daemon on the fake driver.
//
//	go test -run='^$' -bench=ProbeRound -count=6 ./engine/worker
func BenchmarkProbeRound(b *testing.B) {
	const n = 1000
	h := bigPool(b, n)
	round := func() {
		h.clk.Advance(h.cfg.Cloud.ProbeInterval)
		h.pool.Step()
		h.pool.Wait()
	}
	round()
	probes0 := h.pool.Stats().Probes
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuNow(b)
	for b.Loop() {
		round()
	}
	c1 := cpuNow(b)
	runtime.ReadMemStats(&m1)
	probes := float64(h.pool.Stats().Probes - probes0)
	if probes < float64(b.N*n) {
		b.Fatalf("%.0f probes in %d rounds of %d instances", probes, b.N, n)
	}
	b.ReportMetric(float64(c1-c0)/probes, "cpu-ns/probe")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/probes, "B/probe")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/probes, "allocs/probe")
}
