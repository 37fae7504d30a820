package tui

// An attached console's memory and the time from a change to its frame,
// with the daemon's API served in the test process (real HTTP, a real
// engine on the fake driver).

import (
	"context"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

// attachedDaemon is a paused engine holding n waiting containers (with a
// label each) and its API; the client is what the CLI would use.
func attachedDaemon(tb testing.TB, n int) (*enginetest.Env, *api.Client) {
	tb.Helper()
	env := enginetest.New(tb, enginetest.Config(tb), fake.Options{}, engine.Options{})
	if err := env.Engine.Pause("test", ""); err != nil {
		tb.Fatal(err)
	}
	for done := 0; done < n; {
		specs := make([]view.Spec, min(10000, n-done))
		for i := range specs {
			specs[i] = view.Spec{Command: []string{"true"}, Labels: map[string]string{"team": "t"}}
		}
		if _, err := env.Engine.SubmitBatch(specs, "test"); err != nil {
			tb.Fatal(err)
		}
		done += len(specs)
	}
	srv := httptest.NewServer(api.NewServer(api.ServerOptions{Engine: env.Engine}))
	tb.Cleanup(srv.Close)
	return env, api.NewClient(srv.URL, "")
}

// attachedConsole is a console on a Remote over c, on the containers view
// after its first read; refresh runs one fetch and its frame, as the
// runtime would.
func attachedConsole(tb testing.TB, c *api.Client) (m *Model, remote *backend.Remote, refresh func()) {
	tb.Helper()
	remote = backend.NewRemote(c, "remote")
	m, err := newModel(Options{Backend: remote, Theme: "dark"}, fixedClock)
	if err != nil {
		tb.Fatal(err)
	}
	m.tick = stillTick
	size(m, 160, 40)
	refresh = func() {
		m.fetching = false
		runCmd(m, m.startFetch())
		m.View()
	}
	refresh()
	runCmd(m, press(m, "2"))
	refresh()
	if m.snapErr != nil {
		tb.Fatal(m.snapErr)
	}
	return m, remote, refresh
}

// An attached console holds its containers once, as the backend's compact
// rows: the containers table adds next to nothing per container (it builds
// the cells of the rows it shows), and a refresh after one change
// allocates nothing like a copy of them. (Before, the table held every
// row's cells, about 430 bytes a container, and each refresh built a new
// slice of every row.)
func TestAttachedConsoleHoldsRowsOnce(t *testing.T) {
	const n = 12000
	env, c := attachedDaemon(t, n)
	m, remote, refresh := attachedConsole(t, c)
	if got := m.tables[vContainers].Len(); got != n {
		t.Fatalf("the console shows %d containers, want %d", got, n)
	}

	// The first new row may grow the rows' last page (at most a page
	// of 4,096 rows, once per page); the refresh after it is measured.
	env.Submit(view.Spec{Command: []string{"true"}})
	refresh()
	env.Submit(view.Spec{Command: []string{"true"}})
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	refresh()
	runtime.ReadMemStats(&m1)
	if got := m.tables[vContainers].Len(); got != n+2 {
		t.Fatalf("after two submits the console shows %d containers, want %d", got, n+2)
	}
	// Client and server: the change read, encoded and decoded, the
	// other views' rows, a frame.
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 1<<20 {
		t.Errorf("a refresh after one submit allocated %d kB with %d containers, want under 1 MB: a copy of the rows?", alloc>>10, n)
	}

	// The heap the model holds beyond the backend's rows. Two collections
	// before each reading: the first only moves sync.Pool contents (the
	// API's JSON encoder keeps a buffer the size of its last answer) to
	// the pools' victim caches, the second frees them.
	settle := func(ms *runtime.MemStats) {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(ms)
	}
	settle(&m0)
	rows := m.ctrs
	m = nil
	settle(&m1)
	per := (int64(m0.HeapAlloc) - int64(m1.HeapAlloc)) / n
	runtime.KeepAlive(rows)
	runtime.KeepAlive(remote)
	t.Logf("the console model holds %d bytes of heap per container beyond its rows", per)
	if per > 64 {
		t.Errorf("the console model holds %d bytes per container beyond the backend's rows, want at most 64: cells built ahead?", per)
	}
}

// BenchmarkChangeToFrame times a change made through the API (as the CLI
// makes it) until the attached console's frame shows it: the daemon's
// change log, the watch, the coalescing of notifications, the fetch of
// the change, its apply and the frame, with the console's own ticks
// running as they do. It reports the median and the largest sample.
//
//	go test -run='^$' -bench='^BenchmarkChangeToFrame$' -benchtime=100x ./tui/
func BenchmarkChangeToFrame(b *testing.B) {
	for _, n := range []int{100000} {
		b.Run("containers="+strconv.Itoa(n), func(b *testing.B) {
			_, c := attachedDaemon(b, n)
			m, remote, _ := attachedConsole(b, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			changed := make(chan struct{}, 1)
			go coalesce(ctx, remote.Changes(ctx), coalesceWindow, func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			})
			var samples []time.Duration
			want := m.tables[vContainers].Shown()
			for b.Loop() {
				want++
				t0 := time.Now()
				if _, err := c.Submit(ctx, view.Spec{Command: []string{"true"}}); err != nil {
					b.Fatal(err)
				}
				for m.tables[vContainers].Shown() < want {
					select {
					case <-changed:
					case <-time.After(wait.Budget(30 * time.Second)):
						b.Fatalf("no change notice in 30 s; the console shows %d, want %d", m.tables[vContainers].Shown(), want)
					}
					m.fetching = false
					runCmd(m, m.startFetch())
					m.View()
				}
				samples = append(samples, time.Since(t0))
			}
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkAttachedChurn is an attached console under the acceptance's
// churn, in process: a paused daemon holding 100,000 waiting containers,
// each round 1 % of them given a new priority (through the engine, not
// timed), then the console's refresh and its frame, as the runtime makes
// them (timed), at the GOGC an attached console runs at (console.go).
// cpu-ns/change is the process's CPU over the refreshes and frames a
// change: the daemon's writing of its pages is in it, its bulk verbs are
// not.
//
//	go test -run='^$' -bench='^BenchmarkAttachedChurn$' -benchtime=40x ./tui/
func BenchmarkAttachedChurn(b *testing.B) {
	const n = 100000
	env, c := attachedDaemon(b, n)
	m, _, refresh := attachedConsole(b, c)
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	all, _ := env.Engine.Containers(engine.ListOptions{})
	ids := make([]string, len(all))
	for i := range all {
		ids[i] = all[i].ID
	}
	all = nil
	round, per := 0, n/100
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		prio := 2 + round%3
		req := engine.BulkRequest{Verb: view.ContainerPriority, Priority: &prio, Actor: "bench"}
		for k := range per {
			req.IDs = append(req.IDs, ids[(k*100+round)%n])
		}
		if _, err := env.Engine.Bulk(req); err != nil {
			b.Fatal(err)
		}
		round++
		b.StartTimer()
		c0 := processCPU(b)
		refresh()
		cpu += processCPU(b) - c0
	}
	b.StopTimer()
	if m.snapErr != nil {
		b.Fatal(m.snapErr)
	}
	if got := m.tables[vContainers].Len(); got != n {
		b.Fatalf("the console shows %d containers, want %d", got, n)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(round*per), "cpu-ns/change")
}

// processCPU is the CPU the process has used (user and system).
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
