package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// BenchmarkChangesPage is GET /v1/containers?changed_since=GEN through the
// API handler: a page of 10,000 of queued containers (labelled as the
// churn's, a pass having given them their pending reasons), read from 0
// (a first read's page) and after 1 % of them changed priority (what
// each watching console reads in the churn): the handler's cost, request
// to written body.
func BenchmarkChangesPage(b *testing.B) {
	const queued, limit = 100_000, 10_000
	env := enginetest.New(b, enginetest.Config(b), fake.Options{}, engine.Options{})
	specs := make([]view.Spec, 10000)
	for range queued / len(specs) {
		for i := range specs {
			specs[i] = view.Spec{Name: "q", Command: []string{"true"}, Labels: map[string]string{"pct": strconv.Itoa(i % 100)},
				RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}
		}
		if _, err := env.Engine.SubmitBatch(specs, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	env.Step(1)
	h := NewServer(ServerOptions{Engine: env.Engine, Token: testToken})
	first, err := env.Engine.ContainerChanges(0, 1)
	if err != nil {
		b.Fatal(err)
	}
	since := first.Latest
	prio := 500
	if _, err := env.Engine.Bulk(engine.BulkRequest{Verb: view.ContainerPriority, Priority: &prio, Actor: "bench",
		Filter: &engine.ListOptions{Labels: map[string]string{"pct": "7"}}}); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		since uint64
		items int
	}{{"first", 0, limit}, {"changed", since, queued / 100}} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", fmt.Sprintf("/v1/containers?changed_since=%d&limit=%d", tc.since, limit), nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			w := &countingWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				w.n, w.status = 0, 0
				clear(w.h)
				h.ServeHTTP(w, req)
				if w.status != http.StatusOK || w.n < tc.items*200 {
					b.Fatalf("status %d, %d bytes for %d items", w.status, w.n, tc.items)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(w.n)/float64(tc.items), "B/item")
		})
	}
}

// countingWriter is a ResponseWriter that keeps only the status, how
// much was written and its last bytes: a recorder's growing buffer would
// be most of what a benchmark of an encoder allocates.
type countingWriter struct {
	h      http.Header
	status int
	n      int
	tail   []byte // the last tailBytes written at most
}

const tailBytes = 512

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	w.tail = append(w.tail, p[max(0, len(p)-tailBytes):]...)
	w.tail = w.tail[max(0, len(w.tail)-tailBytes):]
	return len(p), nil
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
