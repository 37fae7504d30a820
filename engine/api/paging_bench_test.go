package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// BenchmarkListContainersFirstPage is GET /v1/containers?limit=N (the first
// page of `ls containers`) through the API handler, on the fake
// driver with the whole queue waiting: the handler's cost, request to
// encoded body.
func BenchmarkListContainersFirstPage(b *testing.B) {
	for _, tc := range []struct{ queued, limit int }{
		{100000, 1000},
		{1000000, 1000},
	} {
		b.Run(fmt.Sprintf("queued=%d/limit=%d", tc.queued, tc.limit), func(b *testing.B) {
			env := enginetest.New(b, enginetest.Config(b), fake.Options{}, engine.Options{})
			specs := make([]view.Spec, 10000)
			for i := range specs {
				p := 1 + i%5
				specs[i] = view.Spec{Command: []string{"true"}, Priority: &p, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}
			}
			for range tc.queued / len(specs) {
				if _, err := env.Engine.SubmitBatch(specs, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			h := NewServer(ServerOptions{Engine: env.Engine, Token: testToken})
			req := httptest.NewRequest("GET", fmt.Sprintf("/v1/containers?limit=%d", tc.limit), nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK || w.Header().Get(ContinueHeader) == "" {
					b.Fatalf("status %d, token %q", w.Code, w.Header().Get(ContinueHeader))
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time (user and system, every thread) the process has
// used: on a shared machine it says more than wall time. It includes the
// engine's own goroutines (its loop and passes) while the page is served.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
