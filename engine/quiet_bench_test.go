package engine

import (
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
)

// BenchmarkQuietStep: one engine step on a queue waiting at quota, 2,000
// instances busy, with no probe or listing due (the clock held still): the
// pass is skipped, and what is left is the pool's step and what the step
// reads of the instances for the quiet check and the cost ledger.
//
//	go test -run='^$' -bench=QuietStep -count=6 ./engine
func BenchmarkQuietStep(b *testing.B) {
	const n = 2000
	cfg := testConfig(b)
	cfg.Dispatcher.MaxInstances = n
	cfg.Cloud.ProbeInterval = time.Minute
	cfg.Cloud.SyncInterval = time.Hour
	cfg.Cloud.MaxCloudOpsPerSecond = 10000
	cfg.Cloud.MaxProbesPerSecond = 0
	cfg.Cloud.MaxConcurrentCreates = n
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ct := fake.New(fake.Options{Clock: clk})
	eng, err := New(Options{Config: cfg, InstanceSet: ct, NewExecutor: ct.Executor, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	specs := make([]queue.Spec, n+10000)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
		if i < n {
			specs[i].Command = []string{"run-forever"}
		}
	}
	if _, err := eng.SubmitBatch(specs[:n], "bench"); err != nil {
		b.Fatal(err)
	}
	for i := 0; eng.queue.Counts()[queue.Running] < n; i++ {
		if i == 600 {
			b.Fatalf("%d running after 600 steps", eng.queue.Counts()[queue.Running])
		}
		eng.Step()
		eng.Settle()
		clk.Advance(time.Second)
	}
	if _, err := eng.SubmitBatch(specs[n:], "bench"); err != nil {
		b.Fatal(err)
	}
	for range 5 { // the reasons set, the probes of the last second done
		eng.Step()
		eng.Settle()
	}
	passes := eng.sched.Passes()
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		eng.Step()
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if p := eng.sched.Passes() - passes; p != 0 {
		b.Fatalf("%d passes in %d quiet steps", p, b.N)
	}
}
