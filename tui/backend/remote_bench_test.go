package backend

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// BenchmarkRemoteRefresh is what an attached console (--connect) pays per
// refresh against a daemon on the fake driver holding N waiting
// containers, over real HTTP: refresh=full is a first read (every
// container read and decoded), refresh=delta one after 1 % of them changed
// (their changes read and applied), refresh=cheap one after they did not change (the summary and the newest events only). MB/op
// is what the console read. Run by make bench-million at 1,000,000.
func BenchmarkRemoteRefresh(b *testing.B) {
	for _, n := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			env := enginetest.New(b, enginetest.Config(b), fake.Options{}, engine.Options{})
			specs := make([]view.Spec, 10000)
			for i := range specs {
				p := 1 + i%5
				specs[i] = view.Spec{Command: []string{"true"}, Priority: &p, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}
			}
			for range n / len(specs) {
				if _, err := env.Engine.SubmitBatch(specs, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			srv := httptest.NewServer(api.NewServer(api.ServerOptions{Engine: env.Engine, Token: testToken}))
			b.Cleanup(srv.Close)
			ct := &byteCounter{}
			c := api.NewClient(srv.URL, testToken)
			c.HTTP = &http.Client{Transport: ct}
			r := NewRemote(c, "bench")
			ctx := context.Background()
			for _, kind := range []string{"full", "cheap", "delta"} {
				b.Run("refresh="+kind, func(b *testing.B) {
					s0, err := r.Snapshot(ctx)
					if err != nil {
						b.Fatal(err)
					}
					ct.n.Store(0)
					b.ReportAllocs()
					round := 0
					for b.Loop() {
						switch kind {
						case "full":
							forgetAll(r)
						case "delta":
							b.StopTimer()
							changeSome(b, env.Engine, rowsList(s0), round)
							b.StartTimer()
						}
						round++
						s, err := r.Snapshot(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if s.Rows.Len() != n {
							b.Fatalf("%d containers, want %d", s.Rows.Len(), n)
						}
					}
					b.ReportMetric(float64(ct.n.Load())/1e6/float64(b.N), "MB/op")
					if kind == "full" {
						b.StopTimer()
						b.ReportMetric(retainedMiB(b, r), "snapshot-MiB")
					}
				})
			}
		})
	}
}

// changeSome changes the priority of 1 % of cs (a different 1 % each
// round) in one bulk verb: a refresh=delta reads those changes.
func changeSome(b *testing.B, eng *engine.Engine, cs []Row, round int) {
	ids := make([]string, 0, len(cs)/100)
	for i := round % 100; i < len(cs); i += 100 {
		ids = append(ids, cs[i].ID)
	}
	p := 2 + round%3
	for from := 0; from < len(ids); from += engine.BulkBatch {
		req := engine.BulkRequest{Verb: view.ContainerPriority, Priority: &p, IDs: ids[from:min(len(ids), from+engine.BulkBatch)], Actor: "bench"}
		if _, err := eng.Bulk(req); err != nil {
			b.Fatal(err)
		}
	}
}

// forgetAll drops r's last snapshot and its copy of the containers, so
// that its next Snapshot reads every container again.
func forgetAll(r *Remote) {
	r.mu.Lock()
	r.last = nil
	r.mu.Unlock()
	r.copy.fetch.Lock()
	r.copy.rows, r.copy.gen = nil, 0
	r.copy.fetch.Unlock()
}

// retainedMiB is the heap a full snapshot keeps (what the console holds
// for the daemon's containers), measured around one full read.
func retainedMiB(b *testing.B, r *Remote) float64 {
	forgetAll(r)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s, err := r.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	forgetAll(r) // only s holds it
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(s)
	return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / (1 << 20)
}

// byteCounter counts the response bytes a client reads (chunked ones too).
type byteCounter struct{ n atomic.Int64 }

func (c *byteCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countedBody{resp.Body, &c.n}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}
