package backend

// What an attached console costs the real daemon with 10,000 instances on
// the fake driver (docs/design.md §9.1): the bytes of a refresh of the
// instances, whole and with 1 % of them changed, and the daemon's CPU
// while an idle console is attached. A measurement, run only when asked
// for (BENCHMARKS.md):
//
//	go test -run='^TestDaemonInstanceDeltas$' -count=1 -v -timeout=30m ./tui/backend -daemon-instances

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

var daemonInstances = flag.Bool("daemon-instances", false, "run TestDaemonInstanceDeltas (a measurement, BENCHMARKS.md)")

// cpuTime is the CPU time (user and system) pid has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read the daemon's CPU time: %v", err)
	}
	// Fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line, in clock ticks (100 a second).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func TestDaemonInstanceDeltas(t *testing.T) {
	if !*daemonInstances {
		t.Skip("a measurement: run with -daemon-instances")
	}
	const n = 10000
	dir := t.TempDir()
	bin, err := enginetest.BuildBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfgPath := filepath.Join(dir, "config.toml")
	cfg := enginetest.FleetConfig(filepath.Join(dir, "state"), addr, "bench-token", n)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(bin, "--daemon", "--config", cfgPath)
	logf, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	daemon.Stderr = logf
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		daemon.Process.Signal(syscall.SIGTERM)
		daemon.Wait()
	})
	ctx := context.Background()
	client := api.NewClient(addr, "bench-token")
	wait.Until(t, "daemon up", 30*time.Second, func() bool { _, err := client.Summary(ctx); return err == nil })
	specs := make([]view.Spec, 1000)
	for i := range specs {
		specs[i] = view.Spec{Command: []string{"run-forever"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 29}}
	}
	for range n / len(specs) {
		if _, err := client.SubmitBatch(ctx, specs); err != nil {
			t.Fatal(err)
		}
	}
	wait.Until(t, "10,000 instances running", 15*time.Minute, func() bool {
		s, err := client.Summary(ctx)
		return err == nil && s.Instances[view.InstanceRunning] >= n
	})
	pid := daemon.Process.Pid
	const window = 30 * time.Second
	idleCPU := func() time.Duration {
		c0 := cpuTime(t, pid)
		time.Sleep(window) // a measurement window, not a wait for a state
		return cpuTime(t, pid) - c0
	}
	time.Sleep(10 * time.Second) // past the last boots' probes
	alone := idleCPU()
	t.Logf("daemon, %d instances, no console: CPU %s in %s (%.1f %%)", n, alone, window, 100*alone.Seconds()/window.Seconds())

	// The whole list, as a console read it on every change before.
	ct := &byteCounter{}
	rc := api.NewClient(addr, "bench-token")
	rc.HTTP = &http.Client{Transport: ct}
	if _, err := rc.Instances(ctx); err != nil {
		t.Fatal(err)
	}
	whole := ct.n.Swap(0)
	r := NewRemote(rc, "bench")
	first, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Instances) < n {
		t.Fatalf("the console has %d instances, want %d", len(first.Instances), n)
	}
	t.Logf("GET /v1/instances: %d bytes; the console's first snapshot read %d bytes (every container and instance)", whole, ct.n.Swap(0))

	// The console attached and idle: it refreshes as the TUI does, on
	// each signal of Changes (the ticker and the watches).
	cctx, cancel := context.WithCancel(ctx)
	refreshes := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range r.Changes(cctx) {
			if _, err := r.Snapshot(cctx); err == nil {
				refreshes++
			}
		}
	}()
	attached := idleCPU()
	cancel()
	<-done
	idleBytes := ct.n.Swap(0)
	t.Logf("daemon with an idle console attached: CPU %s in %s (%.1f %%), %+.1f %% for the console; %d refreshes, %d bytes read (%d a refresh)",
		attached, window, 100*attached.Seconds()/window.Seconds(), 100*(attached-alone).Seconds()/window.Seconds(),
		refreshes, idleBytes, idleBytes/int64(max(refreshes, 1)))

	// 1 % of the instances changed: held, then the refresh reads them.
	insts := first.Instances
	for i := 0; i < len(insts); i += 100 {
		if _, err := client.InstanceVerb(ctx, string(insts[i].ID), view.InstanceHold, "bench"); err != nil {
			t.Fatal(err)
		}
	}
	ct.n.Store(0)
	list, err := r.instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, v := range list {
		if v.IdleBehavior == view.IdleHold {
			held++
		}
	}
	delta := ct.n.Load()
	t.Logf("a refresh of the instances with 1 %% changed (%d held): %d bytes, %.1f %% of the whole list's %d", held, delta, 100*float64(delta)/float64(whole), whole)
	if held != n/100 {
		t.Fatalf("the console shows %d instances held, want %d", held, n/100)
	}
}
