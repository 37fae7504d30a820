package engine

import (
	"strconv"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
)

// newBenchEngine is an engine on the fake cloud and a fake clock, with
// the tests' config (a real bbolt file) and no scheduler running.
func newBenchEngine(b *testing.B) *Engine {
	b.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ct := fake.New(fake.Options{Clock: clk})
	eng, err := New(Options{Config: testConfig(b), InstanceSet: ct, NewExecutor: ct.Executor, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	return eng
}

// BenchmarkSummary100k measures one Summary call with 100,000 containers
// in the queue: the console and GET /v1/summary call it on every refresh.
func BenchmarkSummary100k(b *testing.B) {
	eng := newBenchEngine(b)
	specs := make([]queue.Spec, 100000)
	for i := range specs {
		specs[i] = queue.Spec{Name: "bench-" + strconv.Itoa(i), Command: []string{"true"},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
	}
	for i := 0; i < len(specs); i += 10000 {
		if _, err := eng.queue.SubmitBatch(specs[i:i+10000], "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if s := eng.Summary(); s.Containers[queue.Queued] != len(specs) {
			b.Fatalf("summary counts %d queued, want %d", s.Containers[queue.Queued], len(specs))
		}
	}
}
