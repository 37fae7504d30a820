package tui

// What an attached console's refresh costs in the console itself, the
// daemon's API served in the test process:
//
//	go test -run='^$' -bench='^BenchmarkAttachedRefresh$' -benchmem -count=1 ./tui/

import (
	"net/http/httptest"
	"runtime"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

// BenchmarkAttachedRefresh is one refresh of a console attached to a
// daemon with 100,000 waiting containers after one more was submitted:
// the changes read and applied, the rows of every view built and
// installed (B/op counts the daemon's side too). rows-MiB is the heap
// after a GC with the console loaded, less the same without it.
func BenchmarkAttachedRefresh(b *testing.B) {
	env := enginetest.New(b, enginetest.Config(b), fake.Options{}, engine.Options{})
	if err := env.Engine.Pause("bench", ""); err != nil {
		b.Fatal(err)
	}
	specs := make([]view.Spec, 10000)
	for i := range specs {
		specs[i] = view.Spec{Command: []string{"true"}, Labels: map[string]string{"team": "t"}}
	}
	for range 10 {
		if _, err := env.Engine.SubmitBatch(specs, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(api.NewServer(api.ServerOptions{Engine: env.Engine}))
	b.Cleanup(srv.Close)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := newModel(Options{Backend: backend.NewRemote(api.NewClient(srv.URL, ""), "remote"), Theme: "dark"}, fixedClock)
	if err != nil {
		b.Fatal(err)
	}
	m.tick = stillTick
	size(m, 160, 40)
	refresh := func() {
		m.fetching = false
		runCmd(m, m.startFetch())
		m.View()
	}
	refresh()
	press(m, "2")
	refresh()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		env.Submit(view.Spec{Command: []string{"true"}})
		b.StartTimer()
		refresh()
	}
	b.StopTimer()
	if m.snapErr != nil {
		b.Fatal(m.snapErr)
	}
	b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/(1<<20), "rows-MiB")
}
