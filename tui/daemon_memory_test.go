package tui

// The memory target of docs/design.md §9 measured on the real daemon, with a
// console attached to it: a --daemon on the fake driver with
// 100,000 containers queued and 1,000 instances running. It runs only when
// asked for (make bench-memory):
//
//	go test -run='^TestDaemonMemory100k$' -count=1 -v ./tui -daemon-memory

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

var daemonMemory = flag.Bool("daemon-memory", false, "run TestDaemonMemory100k (make bench-memory)")

// countingTransport counts the response bytes a client reads.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{resp.Body, &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// procMemory reads VmRSS, RssAnon, RssFile and VmHWM of pid in MiB.
func procMemory(t *testing.T, pid int) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the daemon's memory: %v", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && slices.Contains([]string{"VmRSS:", "RssAnon:", "RssFile:", "VmHWM:"}, f[0]) {
			kb, _ := strconv.ParseFloat(f[1], 64)
			out[strings.TrimSuffix(f[0], ":")] = kb / 1024
		}
	}
	return out
}

func TestDaemonMemory100k(t *testing.T) {
	if !*daemonMemory {
		t.Skip("run with -daemon-memory (make bench-memory)")
	}
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
	cfg := fmt.Sprintf(`[dispatcher]
state_dir = %q
listen = %q
token = "memtest-token"
max_instances = 1000

[cloud]
driver = \"fake\"
max_concurrent_creates = 200
max_cloud_ops_per_second = 1000
max_probes_per_second = 2000

[[instance_type]]
name = "small"
vcpus = 1
ram = "2GiB"
scratch = "10GiB"
price = 0.05
`, filepath.Join(dir, "state"), addr)
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
	client := api.NewClient(addr, "memtest-token")
	ctx := context.Background()
	wait.Until(t, "daemon up", 30*time.Second, func() bool { _, err := client.Summary(ctx); return err == nil })

	// 100,000 submits through the API, 8 at a time.
	const n = 100000
	t0 := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				spec := view.Spec{Name: "mem-" + strconv.FormatInt(i, 10), Command: []string{"run-forever", strconv.FormatInt(i, 10)},
					RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 29}}
				if _, err := client.Submit(ctx, spec); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	t.Logf("submitted %d containers through the API in %s", n, time.Since(t0).Round(time.Millisecond))
	wait.Until(t, "1,000 instances running", 10*time.Minute, func() bool {
		s, err := client.Summary(ctx)
		return err == nil && s.Instances["running"] >= 1000
	})
	time.Sleep(5 * time.Second) // a few passes and probes at that shape
	pid := daemon.Process.Pid
	before := procMemory(t, pid)
	t.Logf("daemon, 100,000 containers and 1,000 instances: RSS %.0f MiB (anon %.0f, file %.0f), peak %.0f MiB",
		before["VmRSS"], before["RssAnon"], before["RssFile"], before["VmHWM"])

	// Attach a console the way --connect does and measure it.
	ct := &countingTransport{}
	rc := api.NewClient(addr, "memtest-token")
	rc.HTTP = &http.Client{Transport: ct}
	remote := backend.NewRemote(rc, "remote "+addr)
	m, err := newModel(Options{Backend: remote, Theme: "dark"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	size(m, 120, 40)
	t1 := time.Now()
	m.Update(m.startFetch()())
	t.Logf("console attach: first snapshot in %s, %.1f MB read", time.Since(t1).Round(time.Millisecond), float64(ct.n.Load())/1e6)
	press(m, "2")
	if got := m.tables[vContainers].Len(); got < n {
		t.Fatalf("the console shows %d containers, want %d", got, n)
	}
	// Each key press and the frame after it, timed on its own: a cursor
	// move, then a filter typed key by key (each keystroke re-filters
	// all 100,000 rows), then esc.
	var keyTimes []time.Duration
	for i := 0; i < 20; i++ {
		for _, k := range []string{"j", "/", "m", "e", "m", "-", "9", "esc"} {
			k0 := time.Now()
			if len(k) == 1 && k != "j" && k != "/" {
				typeText(m, k)
			} else {
				press(m, k)
			}
			_ = m.View()
			keyTimes = append(keyTimes, time.Since(k0))
		}
	}
	slices.Sort(keyTimes)
	t.Logf("console key → frame with the daemon's 100,000 containers: median %s, max %s (%d samples)",
		keyTimes[len(keyTimes)/2].Round(10*time.Microsecond), keyTimes[len(keyTimes)-1].Round(10*time.Microsecond), len(keyTimes))

	// Steady state: the console's refreshes while nothing changes.
	const idle = 10
	ct.n.Store(0)
	for i := 0; i < idle; i++ {
		time.Sleep(time.Second)
		msg := m.startFetch()()
		m.Update(msg)
	}
	t.Logf("console refresh traffic while nothing changes: %d bytes/s", ct.n.Load()/idle)
	after := procMemory(t, pid)
	t.Logf("daemon after serving the console: RSS %.0f MiB (anon %.0f, file %.0f), peak %.0f MiB",
		after["VmRSS"], after["RssAnon"], after["RssFile"], after["VmHWM"])
	if after["VmHWM"] > 200 {
		t.Errorf("daemon peak RSS %.0f MiB, target ≤ 200 MiB", after["VmHWM"])
	}
}
