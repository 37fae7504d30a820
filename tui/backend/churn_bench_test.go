package backend

// What an attached console's copy of N containers costs while 1 % of the
// queue changes at a time, as in the acceptance run at a million (every
// waiting container's priority changed, a hundredth of the queue a
// round), without a daemon in the process: the changes pages are made up
// as they are asked for.
//
//	go test -run='^$' -bench='^BenchmarkChurn$' -benchtime=1x -count=1 ./tui/backend/ -churn=1000000

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

var (
	churnN      = flag.Int("churn", 100000, "containers BenchmarkChurn holds")
	churnRounds = flag.Int("churn.rounds", 100, "rounds of 1 % of the queue BenchmarkChurn applies")
	churnPlaces = flag.Bool("churn.places", false, "BenchmarkChurn's waiting containers show their place in the line, but the first, at quota, as the scheduler writes them at quota (engine/scheduler); by default every one shows the quota")
)

// churnQueue serves GET /v1/containers?changed_since for n waiting
// containers at quota: generations 1…n are their first listing, and each
// later one a priority change of one of them, a round changing every
// hundredth container (round r those whose index is r mod 100).
type churnQueue struct {
	n       int
	places  bool         // -churn.places
	changes atomic.Int64 // changes made so far
}

func (q *churnQueue) round() int { return max(q.n/100, 1) }

// next makes one more round of changes.
func (q *churnQueue) next() { q.changes.Add(int64(q.round())) }

// item is the container as generation g shows it (1 ≤ g ≤ n+changes).
func (q *churnQueue) item(g int) view.Container {
	i, prio := g-1, 1
	if g > q.n {
		k := g - q.n - 1
		r := k / q.round()
		i, prio = (k%q.round())*100+r%100, 2+r%3
	}
	c := view.Container{State: view.Queued, Priority: prio}
	c.ID = fmt.Sprintf("c-%016x", uint64(i)*0x9e3779b97f4a7c15)
	c.Name = "q-" + strconv.Itoa(i)
	c.Command = []string{"true"}
	c.Labels = map[string]string{"team": "t" + strconv.Itoa(i%7), "pct": strconv.Itoa(i % 100)}
	c.MaxAttempts, c.Seq = 3, uint64(i+1)
	c.CreatedAt = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	c.ReasonCode, c.Reason = view.ReasonQuota, "at quota (max_instances)"
	if q.places && i > 0 {
		// The console numbers the line itself (Rows.numberLine).
		c.ReasonCode, c.Reason = view.ReasonPosition, "position 1 in queue"
	}
	return c
}

// ServeHTTP writes the page as the daemon does (engine/api
// changespage.go: each view by queue.AppendViewJSON, then its cost), an
// item at a time into one buffer, so that the test's own heap and CPU
// stay out of the console's as far as they can.
func (q *churnQueue) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	from, _ := strconv.Atoi(r.URL.Query().Get("changed_since"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	latest := q.n + int(q.changes.Load())
	to := min(latest, from+limit)
	w.Header().Set("Content-Type", "application/json")
	b := []byte(`{"items":[`)
	for g := from + 1; g <= to; g++ {
		if g > from+1 {
			b = append(b, ',')
		}
		c := q.item(g)
		b, _ = queue.AppendViewJSON(b, &c)
		b = append(b[:len(b)-1], `,"cost":0}`...)
		if len(b) >= 64<<10 {
			w.Write(b)
			b = b[:0]
		}
	}
	b = fmt.Appendf(b, `],"removed":[],"generation":%d,"more":%v,"latest":%d,"items_available":%d}`+"\n", to, to < latest, latest, q.n)
	w.Write(b)
}

// BenchmarkChurn reads -churn containers as an attached console does,
// then applies -churn.rounds rounds of 1 % of them changed, one refresh
// a round, at the GOGC an attached console runs at. It reports the heap
// the copy holds after a GC once read (read-MiB) and after the rounds
// (held-MiB), the most heap in use during the rounds (peak-MiB, sampled
// every millisecond), the process's RSS after the read and after the
// rounds, and its peak RSS during the rounds (VmHWM reset after the
// read); ms/round is a refresh's wall time, cpu-ns/change the process's
// CPU over the rounds a change (the made-up daemon's writing of its pages
// included, about a tenth of it).
func BenchmarkChurn(b *testing.B) {
	n, rounds := *churnN, *churnRounds
	defer debug.SetGCPercent(debug.SetGCPercent(25)) // the attached console's (console.go)
	ctx := context.Background()
	for b.Loop() {
		q := &churnQueue{n: n, places: *churnPlaces}
		srv := httptest.NewServer(q)
		runtime.GC()
		base := heapInUse()
		r := NewRemote(api.NewClient(srv.URL, ""), "bench")
		rows, err := r.containers(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if rows.Len() != n {
			b.Fatalf("read %d containers, want %d", rows.Len(), n)
		}
		runtime.GC()
		read := heapInUse() - base
		rssRead := procMiB("VmRSS")
		resetPeakRSS(b)

		peakHeap := samplePeakHeap()
		start, cpu0 := time.Now(), processCPU(b)
		for range rounds {
			q.next()
			if _, err := r.containers(ctx); err != nil {
				b.Fatal(err)
			}
		}
		per := time.Since(start) / time.Duration(rounds)
		cpu := processCPU(b) - cpu0
		top := peakHeap()
		rss, hwm := procMiB("VmRSS"), procMiB("VmHWM")
		runtime.GC()
		held := heapInUse() - base
		srv.Close()
		runtime.KeepAlive(r)

		b.ReportMetric(float64(read)/(1<<20), "read-MiB")
		b.ReportMetric(float64(held)/(1<<20), "held-MiB")
		b.ReportMetric(float64(top-base)/(1<<20), "peak-MiB")
		b.ReportMetric(rssRead, "rss-read-MiB")
		b.ReportMetric(rss, "rss-MiB")
		b.ReportMetric(hwm, "rss-peak-MiB")
		b.ReportMetric(float64(per.Microseconds())/1000, "ms/round")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(rounds*q.round()), "cpu-ns/change")
	}
}

// processCPU is the CPU the process has used (user and system).
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS starts /proc/self/status's VmHWM again from the RSS now.
func resetPeakRSS(tb testing.TB) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Fatalf("reset the peak RSS: %v", err)
	}
}
