package backend

// What an attached console's copy of a million containers holds, and
// what its first read takes at its peak, without a daemon's heap in the
// same process: the daemon's changes pages are made up as they are asked
// for, shaped as the acceptance test's queue (a name each, two labels,
// waiting while the scheduler is paused).
//
//	go test -run='^$' -bench='^BenchmarkFirstRead$' -benchtime=1x -count=1 ./tui/backend/ -first-read=1000000

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

var firstReadN = flag.Int("first-read", 100000, "containers BenchmarkFirstRead reads")

// changesServer answers GET /v1/containers?changed_since for n made-up
// waiting containers, a page at a time (the generation is how many were
// sent).
func changesServer(n int) http.Handler {
	created := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("changed_since"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		to := min(n, from+limit)
		// One item at a time: the test's own heap stays out of the
		// console's peak.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"items":[`)
		enc := json.NewEncoder(w)
		for i := from; i < to; i++ {
			c := view.Container{State: view.Queued, Priority: 1}
			c.ID = fmt.Sprintf("c-%016x", uint64(i)*0x9e3779b97f4a7c15)
			c.Name = "q-" + strconv.Itoa(i)
			c.Command = []string{"true"}
			c.Labels = map[string]string{"team": "t" + strconv.Itoa(i%7), "pct": strconv.Itoa(i % 100)}
			c.MaxAttempts, c.CreatedAt, c.Seq = 3, created.Add(time.Duration(i)*time.Millisecond), uint64(i+1)
			c.ReasonCode, c.Reason = view.ReasonPaused, "scheduler paused"
			if i > from {
				fmt.Fprint(w, ",")
			}
			_ = enc.Encode(api.ContainerItem{Container: c})
		}
		fmt.Fprintf(w, `],"removed":[],"generation":%d,"more":%v,"latest":%d,"items_available":%d}`, to, to < n, n, n)
	})
}

// BenchmarkFirstRead is an attached console's first read of -first-read
// containers: held-B/ctr is the heap its copy holds per container after
// a GC, peak-MiB the most heap in use during the read (sampled every
// millisecond), at the GOGC an attached console runs at.
func BenchmarkFirstRead(b *testing.B) {
	n := *firstReadN
	srv := httptest.NewServer(changesServer(n))
	b.Cleanup(srv.Close)
	defer debug.SetGCPercent(debug.SetGCPercent(25)) // the attached console's (console.go)
	var held, peak float64
	for b.Loop() {
		runtime.GC()
		base := heapInUse()
		peakHeap := samplePeakHeap()
		r := NewRemote(api.NewClient(srv.URL, ""), "bench")
		rows, err := r.containers(context.Background())
		top := peakHeap()
		if err != nil {
			b.Fatal(err)
		}
		if rows.Len() != n {
			b.Fatalf("read %d containers, want %d", rows.Len(), n)
		}
		runtime.GC()
		held = float64(heapInUse()-base) / float64(n)
		peak = float64(top-base) / (1 << 20)
		runtime.KeepAlive(r)
	}
	b.ReportMetric(held, "held-B/ctr")
	b.ReportMetric(held*float64(n)/(1<<20), "held-MiB")
	b.ReportMetric(peak, "peak-MiB")
	if rss, hwm := procMiB("VmRSS"), procMiB("VmHWM"); rss > 0 {
		b.ReportMetric(rss, "rss-MiB") // the test process's, after the read
		b.ReportMetric(hwm, "rss-peak-MiB")
	}
}

// procMiB is a size /proc/self/status gives (0 where there is none).
func procMiB(key string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

// samplePeakHeap samples heapInUse every millisecond until the returned
// function is called, which returns the highest it saw.
func samplePeakHeap() (stop func() uint64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var top uint64
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				top = max(top, heapInUse())
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return top
	}
}

// heapInUse is the heap's live and not yet collected objects, in bytes.
func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The copy a first read leaves holds about 225 bytes a container: the
// row, its id and name, and 4–8 bytes of index by id; nothing kept of
// the read's scratch (the waiting line's order is 32 bytes a container,
// a map by id 45).
func TestFirstReadHoldsLittle(t *testing.T) {
	const n = 20000
	srv := httptest.NewServer(changesServer(n))
	t.Cleanup(srv.Close)
	r := NewRemote(api.NewClient(srv.URL, ""), "test")
	runtime.GC()
	runtime.GC()
	base := heapInUse()
	rows, err := r.containers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	runtime.GC()
	runtime.GC()
	per := (int64(heapInUse()) - int64(base)) / n
	if rows.Len() != n {
		t.Fatalf("read %d containers, want %d", rows.Len(), n)
	}
	runtime.KeepAlive(r)
	if per > 250 {
		t.Errorf("the copy of %d containers holds %d bytes of heap a container, want at most 250", n, per)
	}
	t.Logf("%d bytes of heap a container", per)
}

// After a large first read the console holds what its copy needs, not
// the garbage of the pages it decoded: that is collected and handed back
// before the read returns.
func TestFirstReadLeavesNoGarbage(t *testing.T) {
	const n = 20000
	defer func(m int) { releaseMin = m }(releaseMin)
	releaseMin = n
	srv := httptest.NewServer(changesServer(n))
	t.Cleanup(srv.Close)
	r := NewRemote(api.NewClient(srv.URL, ""), "test")
	runtime.GC()
	base := heapInUse()
	if _, err := r.containers(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := heapInUse()
	runtime.GC()
	live := heapInUse()
	runtime.KeepAlive(r)
	held, garbage := int64(live)-int64(base), int64(after)-int64(live)
	if garbage > held/4 {
		t.Errorf("after a first read of %d containers: %d kB of garbage in the heap beside %d kB held, want under a quarter", n, garbage>>10, held>>10)
	}
	t.Logf("held %d kB, garbage %d kB", held>>10, garbage>>10)
}
