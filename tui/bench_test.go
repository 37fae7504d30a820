package tui

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

func benchModel(b *testing.B) *Model { return benchModelSized(b, 1000, 100000) }

// benchModelSized is a console on the containers view of a snapshot with
// nInst instances and nCtr containers.
func benchModelSized(b *testing.B, nInst, nCtr int) *Model {
	m, _ := benchModelHeap(b, nInst, nCtr)
	return m
}

// benchModelHeap is benchModelSized and the heap the model holds (its
// snapshot, rows and filter index) in MiB.
func benchModelHeap(b *testing.B, nInst, nCtr int) (*Model, float64) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	m, fb := newTest(b, Options{})
	size(m, 120, 40)
	load(b, m, fb, fakeSnapshot(nInst, nCtr))
	fb.set(nil) // the model's copy only
	press(m, "2")
	m.View()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	return m, (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / (1 << 20)
}

func BenchmarkView(b *testing.B) {
	m := benchModel(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

func BenchmarkKeyToFrame(b *testing.B) {
	m := benchModel(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		press(m, "j")
		_ = m.View()
		press(m, "/")
		typeText(m, "c-00")
		_ = m.View()
		press(m, "esc")
		_ = m.View()
	}
}

// BenchmarkConsoleKeys is key → frame for each key an operator uses, one
// key and the frame after it per op, on the containers view at 100,000
// and 1,000,000 rows (docs/design.md §9.1). Keys that toggle (sort, view switch,
// filter) alternate, so every op does the work of one press; filter-typed
// types a prefix every id shares, filter-id the digits of one id.
// frame-ns/op is key → frame (Update of the key and View); result-ns/op
// is key → result frame: then the commands the key returned are run and
// their messages fed back as the runtime would (a sort or filter done in
// the background), and the frame drawn (ns/op is that too). Where the
// work is done within Update the two are the same.
func BenchmarkConsoleKeys(b *testing.B) {
	for _, sz := range []struct{ inst, ctr int }{{1000, 100000}, {10000, 1000000}} {
		m, heap := benchModelHeap(b, sz.inst, sz.ctr)
		name := fmt.Sprintf("containers=%d/instances=%d", sz.ctr, sz.inst)
		keysOf := []struct {
			name string
			seq  [][]string // ops cycled through; each op is one key (or typed text)
		}{
			{"frame", [][]string{{}}},
			{"down", [][]string{{"j"}}},
			{"pagedown", [][]string{{"pgdown"}, {"pgdown"}, {"pgdown"}, {"g"}}},
			{"sort", [][]string{{"P"}}},
			{"sort-name", [][]string{{"N"}}},
			{"sort-reason", [][]string{{"R"}}},
			{"filter-typed", [][]string{{"/"}, {"text:c"}, {"text:-"}, {"text:0"}, {"text:0"}, {"esc"}}},
			{"filter-id", [][]string{{"/"}, {"text:4"}, {"text:2"}, {"text:1"}, {"text:3"}, {"text:7"}, {"esc"}}},
			{"view-switch", [][]string{{"1"}, {"2"}}},
		}
		for _, k := range keysOf {
			b.Run(name+"/key="+k.name, func(b *testing.B) {
				var cmds []tea.Cmd
				var frame, result, cpu time.Duration
				// each op's result time, by its place in the sequence:
				// the slowest key of a sequence is reported apart.
				byStep := make([]time.Duration, len(k.seq))
				steps := make([]int, len(k.seq))
				op := func(i int) {
					c0 := cpuTime()
					t0 := time.Now()
					cmds = cmds[:0]
					for _, s := range k.seq[i%len(k.seq)] {
						if len(s) > 5 && s[:5] == "text:" {
							for _, r := range s[5:] {
								_, c := m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
								cmds = append(cmds, c)
							}
						} else {
							cmds = append(cmds, press(m, s))
						}
					}
					_ = m.View()
					t1 := time.Now()
					for _, c := range cmds {
						runCmd(m, c)
					}
					_ = m.View()
					frame += t1.Sub(t0)
					result += time.Since(t0)
					byStep[i%len(k.seq)] += time.Since(t0)
					steps[i%len(k.seq)]++
					cpu += cpuTime() - c0
				}
				b.ReportAllocs()
				i := 0
				for ; b.Loop(); i++ {
					op(i)
				}
				b.StopTimer()
				b.ReportMetric(float64(frame.Nanoseconds())/float64(i), "frame-ns/op")
				b.ReportMetric(float64(result.Nanoseconds())/float64(i), "result-ns/op")
				// The process's CPU in the ops, both cores' (a sort or
				// filter splits between them): what a loaded box's wall
				// time does not tell.
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(i), "cpu-ms/op")
				if len(k.seq) > 1 {
					// The mean result of the sequence's slowest key: a
					// filter's first keys search every row, its last few.
					var slowest float64
					for s, d := range byStep {
						slowest = max(slowest, float64(d.Nanoseconds())/float64(max(steps[s], 1)))
					}
					b.ReportMetric(slowest, "slowest-result-ns/op")
				}
				for ; i%len(k.seq) != 0; i++ { // leave the model as found
					op(i)
				}
				if k.name == "frame" {
					b.ReportMetric(heap, "model-MiB")
				}
			})
		}
	}
}

// BenchmarkSwitchAfterSnapshot is key → frame of a switch to the instances
// view (10,000 of them) after a snapshot came while the containers view
// was shown. prepareRows builds every view's rows with each snapshot, off
// the UI goroutine, so that the switch only installs them: building them
// at the switch instead took 9–11 ms (BENCHMARKS.md).
func BenchmarkSwitchAfterSnapshot(b *testing.B) {
	m, fb := newTest(b, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(10000, 1000)
	load(b, m, fb, s)
	press(m, "2")
	m.View()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		load(b, m, fb, s)
		b.StartTimer()
		press(m, "1")
		_ = m.View()
		b.StopTimer()
		press(m, "2")
		b.StartTimer()
	}
}
