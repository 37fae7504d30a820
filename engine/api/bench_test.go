package api

import (
	"net/http/httptest"
	"testing"

	"dispatch-tui/cloud/cloudtest"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
)

// BenchmarkSubmitBatch is one bulk submission of 1,000 containers through
// the API (client encoding, HTTP, decoding, validation, the store commit,
// the response): the daemon's share of a bulk submit, per op. The queue
// grows as it runs, as it does when a user submits many batches.
func BenchmarkSubmitBatch(b *testing.B) {
	env := enginetest.New(b, enginetest.Config(b), cloudtest.Options{}, engine.Options{})
	srv := httptest.NewServer(NewServer(ServerOptions{Engine: env.Engine, Token: testToken}))
	b.Cleanup(srv.Close)
	c := NewClient(srv.URL, testToken)
	specs := make([]queue.Spec, 1000)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.SubmitBatch(b.Context(), specs); err != nil {
			b.Fatal(err)
		}
	}
}
