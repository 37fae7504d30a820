package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"strconv"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

var churnBenchN = flag.Int("churn.containers", 100_000, "queued containers of BenchmarkChurnWithConsoles")

// BenchmarkChurnWithConsoles is the churn of issue 32's acceptance through
// the API handler, in process: a round gives 1 % of -churn.containers
// (100,000 by default, labelled pct=0…99, on the engine's bbolt file) a
// new priority by label (POST /v1/containers/bulk, 5,000 a request), and
// two watching consoles then read what changed (GET
// /v1/containers?changed_since, pages of 10,000) — the daemon's work per
// churned change, the collector's included: cpu-ns/change is the
// process's CPU (rusage) over the changes, gc/kchange the collections
// per 1,000 changes.
func BenchmarkChurnWithConsoles(b *testing.B) {
	n := *churnBenchN
	env := enginetest.New(b, enginetest.Config(b), fake.Options{}, engine.Options{})
	specs := make([]view.Spec, 10_000)
	for done := 0; done < n; done += len(specs) {
		for i := range specs {
			specs[i] = view.Spec{Name: "q", Command: []string{"true"}, Labels: map[string]string{"pct": strconv.Itoa((done + i) % 100)},
				RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}
		}
		if _, err := env.Engine.SubmitBatch(specs[:min(len(specs), n-done)], "bench"); err != nil {
			b.Fatal(err)
		}
	}
	env.Step(1)
	h := NewServer(ServerOptions{Engine: env.Engine, Token: testToken})
	serve := func(method, target string, body []byte) []byte {
		req := httptest.NewRequest(method, target, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body.Bytes())
		}
		return w.Body.Bytes()
	}
	var consoles [2]uint64
	for i := range consoles {
		var ch ChangesBody
		if err := json.Unmarshal(serve("GET", "/v1/containers?changed_since=0&limit=1", nil), &ch); err != nil {
			b.Fatal(err)
		}
		consoles[i] = ch.Latest
	}
	changes := 0
	b.ResetTimer()
	cpu0, gc0 := cpuTime(), gcCycles()
	for r := 0; b.Loop(); r++ {
		prio := 1000 + r
		req := BulkRequest{Verb: view.ContainerPriority.String(), Priority: &prio, Selector: &Selector{Label: []string{"pct=" + strconv.Itoa(r%100)}}}
		for {
			body, err := json.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			var ans BulkAnswer
			if err := json.Unmarshal(serve("POST", "/v1/containers/bulk", body), &ans); err != nil {
				b.Fatal(err)
			}
			changes += ans.OK
			if req.Continue = ans.Continue; req.Continue == "" {
				break
			}
		}
		for i := range consoles {
			for {
				// What a console needs of the page, its end, read
				// without its items: the daemon's work is what is
				// measured.
				req := httptest.NewRequest("GET", fmt.Sprintf("/v1/containers?changed_since=%d&limit=10000", consoles[i]), nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				w := &countingWriter{h: http.Header{}}
				h.ServeHTTP(w, req)
				var ch struct {
					Generation uint64 `json:"generation"`
					More       bool   `json:"more"`
				}
				end := w.tail[bytes.LastIndex(w.tail, []byte(`"generation":`)):]
				if err := json.Unmarshal(append([]byte("{"), end...), &ch); w.status != http.StatusOK || err != nil {
					b.Fatalf("changes: status %d, %v: …%s", w.status, err, w.tail)
				}
				consoles[i] = ch.Generation
				if !ch.More {
					break
				}
			}
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(changes), "cpu-ns/change")
	b.ReportMetric(float64(gcCycles()-gc0)*1000/float64(changes), "gc/kchange")
}

// gcCycles is how many collections the process has made. Each marks the
// whole queue, the same in any version of the code: the collector's work
// per change is its cycles per change (the runtime's own estimate of its
// CPU counts idle time and is updated only as a cycle ends).
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
