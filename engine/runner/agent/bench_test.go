//go:build linux

package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// BenchmarkServeCycle runs what the dispatcher asks of one instance's
// runner for each container, through one "runner serve": a frame of starts
// of `true`, list frames until all have exited, a frame of logs and a frame
// of forgets. Each op is one round of 256 containers; cpu-ms/container is
// the CPU time of this process and its children (the supervisors and the
// commands) per container, the cost that limits end-to-end throughput
// (docs/design.md §9).
//
// The supervisors are this test binary unless $DISPATCH_TUI_BENCH_RUNNER
// names a dispatch-tui binary (CGO_ENABLED=0 go build -o X .), whose
// process start (the init of every package in it) is what an instance
// pays:
//
//	go test -run='^$' -bench=ServeCycle -benchtime=20x ./engine/runner/agent
func BenchmarkServeCycle(b *testing.B) { serveCycle(b, 256) }

// BenchmarkServeCycleSmallFrames is BenchmarkServeCycle with frames of 32
// starts, each under one supervisor, as when the dispatcher has few
// starts per pass for an instance: a supervisor's process start is paid
// per 32 containers, not per 128 (two supervisors for 256 on two CPUs).
func BenchmarkServeCycleSmallFrames(b *testing.B) { serveCycle(b, 32) }

func serveCycle(b *testing.B, round int) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	if bin := os.Getenv(benchRunnerEnv); bin != "" {
		self = bin
	}
	env := Env{StateDir: b.TempDir(), Version: "0.1.0-test", Hash: "abc123", Self: self, SelfArgs: []string{"runner"}, KillGrace: 200 * time.Millisecond}
	srv := startServe(b, env)
	stopServe := func() {
		srv.end()
		// The supervisors' CPU counts once they are reaped, after the
		// end of serve for those it keeps.
		waitNoChildren(b)
	}
	exchange := func(reqs []string) []runner.Reply {
		replies := srv.exchange(reqs...)
		for _, r := range replies {
			if r.Code != 0 {
				b.Fatalf("reply %+v", r)
			}
		}
		return replies
	}
	request := func(verb, id string) string {
		r := runner.Request{Verb: verb, ID: id}
		if verb == "start" {
			spec, _ := json.Marshal(runner.Spec{ID: id, Command: []string{"true"}})
			r.Spec = spec
		}
		if verb == "logs" {
			r.Tail = 1000
		}
		line, _ := json.Marshal(r)
		return string(line)
	}
	frame := func(verb string, ids []string) []string {
		reqs := make([]string, len(ids))
		for i, id := range ids {
			reqs[i] = request(verb, id)
		}
		return reqs
	}
	cpu := func() time.Duration {
		var self, kids syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
		return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	}
	var lists int
	var tStart, tList, tLogs, tForget time.Duration
	timed := func(d *time.Duration, reqs []string) []runner.Reply {
		t0 := time.Now()
		r := exchange(reqs)
		*d += time.Since(t0)
		return r
	}
	cycle := func(name string) {
		ids := make([]string, round)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-%d", name, i)
		}
		timed(&tStart, frame("start", ids))
		deadline := time.Now().Add(30 * time.Second)
		for {
			lists++
			sts, err := runner.ParseList(timed(&tList, []string{`{"verb":"list"}`})[0].Stdout)
			if err != nil {
				b.Fatal(err)
			}
			exited := 0
			for _, st := range sts {
				if st.State == runner.StateExited {
					exited++
				}
			}
			if exited == len(sts) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d exited after 30s", exited, len(sts))
			}
			time.Sleep(10 * time.Millisecond)
		}
		timed(&tLogs, frame("logs", ids))
		timed(&tForget, frame("forget", ids))
	}
	// One round untimed, so that the free pool holds a round's
	// directories, as on an instance that has been running containers.
	// A session of its own, so that its supervisors are gone.
	cycle("warm")
	stopServe()
	srv = startServe(b, env)
	lists, tStart, tList, tLogs, tForget = 0, 0, 0, 0, 0
	cpu0 := cpu()
	b.ResetTimer()
	for n := range b.N {
		cycle(fmt.Sprint("c", n))
	}
	b.StopTimer()
	stopServe()
	b.ReportMetric(float64(cpu()-cpu0)/float64(time.Millisecond)/float64(b.N*round), "cpu-ms/container")
	b.ReportMetric(float64(lists)/float64(b.N), "lists/op")
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(b.N*round) }
	b.ReportMetric(per(tStart), "start-µs/container")
	b.ReportMetric(per(tList)/float64(lists)*float64(b.N), "list-µs/container")
	b.ReportMetric(per(tLogs), "logs-µs/container")
	b.ReportMetric(per(tForget), "forget-µs/container")
}

// benchRunnerEnv names a dispatch-tui binary for the benchmarks to run as
// the runner's supervisors.
const benchRunnerEnv = "DISPATCH_TUI_BENCH_RUNNER"

// waitNoChildren polls until this process has no child left.
func waitNoChildren(b *testing.B) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		kids, _ := filepath.Glob("/proc/self/task/*/children")
		n := 0
		for _, k := range kids {
			if c, err := os.ReadFile(k); err == nil {
				n += len(strings.Fields(string(c)))
			}
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d children left after 30s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
