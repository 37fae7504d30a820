package api

import (
	"net/http/httptest"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// BenchmarkSubmitBatch is one bulk submission of 1,000 containers through
// the API (client encoding, HTTP, decoding, validation, the store commit,
// the response): the daemon's share of a bulk submit, per op. The queue
// grows as it runs, as it does when a user submits many batches.
func BenchmarkSubmitBatch(b *testing.B) {
	env := enginetest.New(b, enginetest.Config(b), fake.Options{}, engine.Options{})
	srv := httptest.NewServer(NewServer(ServerOptions{Engine: env.Engine, Token: testToken}))
	b.Cleanup(srv.Close)
	c := NewClient(srv.URL, testToken)
	specs := make([]view.Spec, 1000)
	for i := range specs {
		specs[i] = view.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.SubmitBatch(b.Context(), specs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBulkKill is 100,000 queued containers killed through the API as
// the CLI's kill --state Queued does it: bulk requests of a selector,
// following the continue token (docs/design.md §4, target ≤ 10 s). The
// store is the real bbolt file, synced; the containers are submitted
// before the timer starts.
func BenchmarkBulkKill(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		b.StopTimer()
		env := enginetest.New(b, enginetest.Config(b), fake.Options{}, engine.Options{})
		srv := httptest.NewServer(NewServer(ServerOptions{Engine: env.Engine, Token: testToken}))
		c := NewClient(srv.URL, testToken)
		specs := make([]view.Spec, MaxBatchItems)
		for i := range specs {
			specs[i] = view.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1}}
		}
		for range n / MaxBatchItems {
			if _, err := env.Engine.SubmitBatch(specs, "bench"); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		req := BulkRequest{Verb: "kill", Selector: &Selector{State: []string{"Queued"}}}
		killed := 0
		for {
			ans, err := c.Bulk(b.Context(), req)
			if err != nil {
				b.Fatal(err)
			}
			killed += ans.OK
			if ans.Continue == "" {
				break
			}
			req.Continue = ans.Continue
		}
		b.StopTimer()
		if killed != n {
			b.Fatalf("%d killed, want %d", killed, n)
		}
		srv.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "kills/s")
}
