package launch

// The throughput benchmark of DESIGN §9 as issue 6 states it: the real
// binary runs as a daemon on the local driver, containers running `true`
// are submitted through its HTTP API, and the time from the first submit
// to the last Complete is measured. It runs only when asked for:
//
//	make bench-e2e   (go test -run='^TestDaemonThroughput$' ./engine/launch -throughput.containers=20000)

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
)

var throughputClients = flag.Int("throughput.clients", 16, "concurrent API clients submitting in TestDaemonThroughput")

// throughputDaemonConfig is e2eConfig's daemon twin with TestLocalThroughput's
// settings: four instances of a type big enough for every container at once.
func throughputDaemonConfig(t *testing.T, stateDir string, port, vcpus int) string {
	t.Helper()
	body := fmt.Sprintf(`[dispatcher]
state_dir = %q
listen = "127.0.0.1:%d"
max_instances = 4
max_containers_per_instance = 0
stale_lock_timeout = "20s"

[cloud]
driver = "local"
runner_path = %q
probe_interval = "100ms"
sync_interval = "1s"
timeout_idle = "1m"
max_concurrent_creates = 4
max_cloud_ops_per_second = 100
max_probes_per_second = 1000

[cloud.local]
boot_delay = "100ms"

[[instance_type]]
name = "big"
vcpus = %d
ram = "1TiB"
scratch = "1TiB"
price = 0.1

[containers]
kill_grace = "1s"
keep_finished = 0
`, stateDir, port, filepath.Join(stateDir, "dispatch-tui-runner"), vcpus)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiClient talks to a daemon's management API on loopback (no token).
type apiClient struct {
	base string
	http *http.Client
}

func (c *apiClient) do(method, path string, body any, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (c *apiClient) summary(t *testing.T) map[queue.State]int {
	t.Helper()
	var s struct {
		Containers map[queue.State]int `json:"containers"`
	}
	if err := c.do("GET", "/v1/summary", nil, &s); err != nil {
		t.Fatal(err)
	}
	return s.Containers
}

// submitAll posts specs with `clients` concurrent connections.
func (c *apiClient) submitAll(specs []queue.Spec, clients int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(specs) {
					return
				}
				if err := c.do("POST", "/v1/containers", specs[i], nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func TestDaemonThroughput(t *testing.T) {
	n := *throughputN
	if n <= 0 {
		t.Skip("set -throughput.containers=N to run (make bench-e2e)")
	}
	state := t.TempDir()
	port := freePort(t)
	cfgPath := throughputDaemonConfig(t, state, port, *throughputVCPUs)
	daemon := exec.Command(binary, "--daemon", "--config", cfgPath)
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	daemon.Stderr = logFile
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		daemon.Process.Signal(os.Interrupt)
		daemon.Wait()
		// Leave nothing running: destroy the instances (kills containers).
		cfg := e2eConfig(state)
		if d, err := New(Options{Config: cfg, RunnerBinary: binary}); err == nil {
			insts, _ := d.Driver.Instances(t.Context(), nil)
			for _, i := range insts {
				i.Destroy(t.Context())
			}
			d.Close()
		}
		if t.Failed() {
			dumpWarnings(t, logPath)
		}
	})
	api := &apiClient{base: fmt.Sprintf("http://127.0.0.1:%d", port), http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *throughputClients},
	}}
	waitFor(t, "daemon API", 30*time.Second, func() bool { return api.do("GET", "/healthz", nil, nil) == nil })

	// Warm up: boot the instances and deploy the runner before timing.
	warm := make([]queue.Spec, 4)
	for i := range warm {
		warm[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: *throughputVCPUs}}
	}
	if err := api.submitAll(warm, len(warm)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "warm-up containers Complete", 2*time.Minute, func() bool {
		return api.summary(t)[queue.Complete] == len(warm)
	})

	specs := make([]queue.Spec, n)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}}
	}
	t0 := time.Now()
	submitted := make(chan error, 1)
	var submitTook time.Duration
	go func() {
		err := api.submitAll(specs, *throughputClients)
		submitTook = time.Since(t0)
		submitted <- err
	}()
	want := len(warm) + n
	last, lastAt := 0, time.Now()
	deadline := time.Now().Add(time.Duration(n)*20*time.Millisecond + time.Minute)
	for {
		s := api.summary(t)
		done := s[queue.Complete]
		if done >= want {
			break
		}
		if done != last {
			last, lastAt = done, time.Now()
		}
		if time.Now().After(deadline) || time.Since(lastAt) > 30*time.Second {
			t.Fatalf("stuck at %d of %d Complete after %s: %v", done-len(warm), n, time.Since(t0).Round(time.Millisecond), s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(t0)
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	s := api.summary(t)
	t.Logf("%d containers submitted through the API (%d clients) → Complete in %s (submits took %s): %.0f containers/s",
		n, *throughputClients, took.Round(time.Millisecond), submitTook.Round(time.Millisecond), float64(n)/took.Seconds())
	for _, st := range []queue.State{queue.Cancelled, queue.Queued, queue.Locked, queue.Running} {
		if c := s[st]; c > 0 {
			t.Errorf("%d containers %s", c, st)
		}
	}
}
