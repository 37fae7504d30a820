package launch

// End-to-end tests: the Engine with the local driver, real SSH and the real
// dispatch-tui binary deployed as the runner.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/runner/agent"
)

// binary is the dispatch-tui executable built once for these tests, and
// runnerHash its sha256, the name it is installed under.
var binary, runnerHash string

// The tests that run a daemon or an engine on the local driver for long
// call t.Parallel: each has a state dir (so its driver's instances), ports
// and database of its own, and spends most of its time waiting on them.
func TestMain(m *testing.M) {
	if os.Getenv("DISPATCH_TUI_E2E_CHILD") != "" {
		os.Exit(childDispatcher())
	}
	dir, err := os.MkdirTemp("", "dispatch-tui-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = enginetest.BuildBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if runnerHash, err = runner.FileHash(binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := pgtest.Run(m) // stops the PostgreSQL server a test may have started
	os.RemoveAll(dir)
	os.Exit(code)
}

func e2eConfig(stateDir string) *config.Config {
	cfg := config.Default()
	cfg.Path = ""
	cfg.Dispatcher.StateDir = stateDir
	cfg.Dispatcher.MaxInstances = 4
	cfg.Dispatcher.MaxContainersPerInstance = 0
	cfg.Dispatcher.StaleLockTimeout = 20 * time.Second
	cfg.Cloud.Driver = "local"
	cfg.Cloud.Local.BootDelay = 100 * time.Millisecond
	cfg.Cloud.RunnerPath = filepath.Join(stateDir, "dispatch-tui-runner")
	cfg.Cloud.ProbeInterval = 200 * time.Millisecond
	cfg.Cloud.SyncInterval = time.Second
	cfg.Cloud.TimeoutIdle = time.Minute
	cfg.Cloud.MaxConcurrentCreates = 4
	cfg.Cloud.MaxCloudOpsPerSecond = 100
	cfg.Cloud.MaxProbesPerSecond = 100
	cfg.Containers.KillGrace = time.Second
	cfg.InstanceTypes = []cloud.InstanceType{{Name: "slot8", ProviderType: "slot8", VCPUs: 8, RAM: 16 << 30, Scratch: 10 << 30, Price: 0.1}}
	preinstallRunner(installedRunner(cfg))
	return cfg
}

// installedRunner is where an engine on cfg installs the runner: the
// configured path with the binary's hash appended.
func installedRunner(cfg *config.Config) string { return cfg.Cloud.RunnerPath + "~" + runnerHash }

// preinstallRunner puts the binary at path, as a machine a dispatcher ran
// on before has it, so that the engine installs nothing: most of these
// tests are not about installing, and an in-process engine under -race
// reading the 78 MB binary and sending it through the local driver's SSH
// spent about 3 s of CPU on it, half of such a test's. On an error the
// file is just not there, and the engine installs it as
// TestLocalRunsContainersToCompletion has it do.
func preinstallRunner(path string) {
	in, err := os.Open(binary)
	if err != nil {
		return
	}
	defer in.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(path)
		return
	}
	if out.Close() != nil {
		os.Remove(path)
	}
}

func startEngine(t *testing.T, cfg *config.Config) (*Running, context.CancelFunc) {
	t.Helper()
	return startEngineWith(t, cfg, Options{Config: cfg, RunnerBinary: binary})
}

func startEngineWith(t *testing.T, cfg *config.Config, opts Options) (*Running, context.CancelFunc) {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	stop := func() {
		cancel()
		<-done
		r.Close()
	}
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			stop()
		}
		// Leave nothing running: destroy the instances (kills containers).
		destroyInstances(cfg)
	})
	return r, stop
}

func countStates(e *engine.Engine, ids []string) map[queue.State]int {
	n := map[queue.State]int{}
	for _, id := range ids {
		c, _ := e.Container(id)
		n[c.State]++
	}
	return n
}

func TestLocalRunsContainersToCompletion(t *testing.T) {
	t.Parallel()
	cfg := e2eConfig(t.TempDir())
	// The one test here that installs the runner from nothing, through
	// the local driver's SSH.
	if err := os.Remove(installedRunner(cfg)); err != nil {
		t.Fatal(err)
	}
	r, _ := startEngine(t, cfg)
	const n = 200
	ids := make([]string, n)
	for i := range ids {
		c, err := r.Submit(queue.Spec{
			Command:            []string{"sh", "-c", "echo $X; exit " + strconv.Itoa(i%7)},
			Env:                map[string]string{"X": "value-" + strconv.Itoa(i)},
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 64 << 20},
		}, "test")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = c.ID
	}
	wait.Until(t, "200 containers Complete", 3*time.Minute, func() bool { return countStates(r.Engine, ids)[queue.Complete] == n })
	// The file on the host, not RunnerDeploys: an install that finished
	// but answered after its call's deadline is not counted, and the next
	// check finds the runner there all the same.
	if _, err := os.Stat(installedRunner(cfg)); err != nil {
		t.Errorf("the runner was removed before the start and the containers completed, yet it is not installed: %v (installs counted: %d)", err, r.PoolStats().RunnerDeploys)
	}
	for i, id := range ids {
		c, _ := r.Container(id)
		if c.ExitCode == nil || *c.ExitCode != i%7 {
			t.Fatalf("container %d: %+v, want exit %d", i, c, i%7)
		}
		var out runner.Output
		wait.Until(t, "logs of "+id, 10*time.Second, func() bool {
			var err error
			out, err = r.Logs(context.Background(), id, 0)
			return err == nil
		})
		if got, want := string(out.Data), "value-"+strconv.Itoa(i)+"\n"; got != want {
			t.Fatalf("container %d: output %q, want %q", i, got, want)
		}
	}
}

func TestLocalHostileArgvAndEnvArriveLiterally(t *testing.T) {
	t.Parallel()
	cfg := e2eConfig(t.TempDir())
	r, _ := startEngine(t, cfg)
	hostile := []string{"; rm -rf x", `"double" 'single'`, "new\nline", "$(touch pwned)", "`id`", "a\\b", "--flag"}
	c, err := r.Submit(queue.Spec{
		Command:            append([]string{"/usr/bin/printf", `%s|\n`}, hostile...),
		Env:                map[string]string{"HOSTILE": "$(touch pwned); echo 'x'\n"},
		RuntimeConstraints: queue.Constraints{VCPUs: 1},
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	env, err := r.Submit(queue.Spec{
		Command:            []string{"/usr/bin/env"},
		Env:                map[string]string{"HOSTILE": "$(touch pwned); echo 'x' `id`"},
		RuntimeConstraints: queue.Constraints{VCPUs: 1},
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{c.ID, env.ID}
	wait.Until(t, "both Complete", time.Minute, func() bool { return countStates(r.Engine, ids)[queue.Complete] == 2 })
	var out []byte
	logs := func(id string) bool {
		var o runner.Output
		o, err = r.Logs(context.Background(), id, 0)
		out = o.Data
		return err == nil
	}
	wait.Until(t, "logs", 10*time.Second, func() bool { return logs(c.ID) })
	want := ""
	for _, a := range hostile {
		want += a + "|\n"
	}
	if string(out) != want {
		t.Fatalf("argv output %q, want %q", out, want)
	}
	wait.Until(t, "env logs", 10*time.Second, func() bool { return logs(env.ID) })
	if !strings.Contains(string(out), "HOSTILE=$(touch pwned); echo 'x' `id`\n") {
		t.Fatalf("env output lacks the literal value: %q", out)
	}
	matches, _ := filepath.Glob(filepath.Join(cfg.Dispatcher.StateDir, "local", "*", "*", "home", "pwned"))
	if len(matches) > 0 {
		t.Fatalf("a value was run by a shell: %v", matches)
	}
}

// pidOf returns the pid the runner of a running container's instance
// lists for it, 0 while it lists none or the dispatcher has not yet seen
// its runner list this attempt.
func pidOf(e *engine.Engine, id string) int {
	c, _ := e.Container(id)
	if !c.RunnerSeen {
		return 0
	}
	if s, ok := runnerStatus(e, c.InstanceID, id); ok && s.State == runner.StateRunning {
		return s.PID
	}
	return 0
}

// runnerStatus is the line the runner of local instance inst lists for
// container id now: the runner's own "list", run over the instance's
// runner directory (cloud/local's layout) as an operator on this machine
// would run it.
func runnerStatus(e *engine.Engine, inst, id string) (runner.Status, bool) {
	if inst == "" {
		return runner.Status{}, false
	}
	dir := filepath.Join(e.Config().Dispatcher.StateDir, "local", "instances", inst, "runner")
	var out, stderr bytes.Buffer
	if agent.Main([]string{"list", id}, nil, &out, &stderr, agent.Env{StateDir: dir}) != 0 {
		return runner.Status{}, false
	}
	sts, err := runner.ParseList(out.Bytes())
	if err != nil || len(sts) != 1 {
		return runner.Status{}, false
	}
	return sts[0], true
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	// A zombie is dead for our purposes.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func TestLocalKillTermThenKill(t *testing.T) {
	t.Parallel()
	cfg := e2eConfig(t.TempDir())
	r, _ := startEngine(t, cfg)
	polite, err := r.Submit(queue.Spec{Command: []string{"sleep", "60"}, RuntimeConstraints: queue.Constraints{VCPUs: 1}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	stubborn, err := r.Submit(queue.Spec{Command: []string{"sh", "-c", `trap "" TERM; echo ready; while :; do sleep 0.1; done`}, RuntimeConstraints: queue.Constraints{VCPUs: 1}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var pPolite, pStubborn int
	wait.Until(t, "both running with pids", time.Minute, func() bool {
		pPolite, pStubborn = pidOf(r.Engine, polite.ID), pidOf(r.Engine, stubborn.ID)
		return pPolite > 0 && pStubborn > 0
	})
	for _, id := range []string{polite.ID, stubborn.ID} {
		if _, err := r.KillContainer(id, "test", "operator test kill"); err != nil {
			t.Fatal(err)
		}
	}
	killedAt := time.Now()
	wait.Until(t, "TERM ends sleep", 10*time.Second, func() bool { return !alive(pPolite) })
	if time.Since(killedAt) < 900*time.Millisecond && !alive(pStubborn) {
		t.Fatalf("the process ignoring TERM died before kill_grace")
	}
	wait.Until(t, "KILL ends the stubborn one", 20*time.Second, func() bool { return !alive(pStubborn) })
	wait.Until(t, "both Cancelled", 20*time.Second, func() bool {
		return countStates(r.Engine, []string{polite.ID, stubborn.ID})[queue.Cancelled] == 2
	})
	for _, tc := range []struct {
		id   string
		code int
	}{{polite.ID, 128 + int(syscall.SIGTERM)}, {stubborn.ID, 128 + int(syscall.SIGKILL)}} {
		c, _ := r.Container(tc.id)
		if c.Reason != "operator test kill" || c.ReasonCode != queue.ReasonKilled || c.ExitCode == nil || *c.ExitCode != tc.code {
			t.Fatalf("%s: reason %q/%s exit %v, want the kill reason and exit %d", tc.id, c.Reason, c.ReasonCode, c.ExitCode, tc.code)
		}
	}
}

// childDispatcher is a dispatcher process for the crash test: it submits
// the workload once, then runs until it is killed.
func childDispatcher() int {
	cfg := e2eConfig(os.Getenv("DISPATCH_TUI_E2E_STATE"))
	r, err := New(Options{Config: cfg, RunnerBinary: os.Getenv("DISPATCH_TUI_E2E_BINARY")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, _ := strconv.Atoi(os.Getenv("DISPATCH_TUI_E2E_N"))
	if total, _ := r.Containers(engine.ListOptions{}); len(total) == 0 {
		for i := 0; i < n; i++ {
			_, err := r.Submit(queue.Spec{
				Name:               "sleeper-" + strconv.Itoa(i),
				Command:            []string{"sh", "-c", `sleep 6; echo "$NAME" >> "$RUNS"`},
				Env:                map[string]string{"NAME": "sleeper-" + strconv.Itoa(i), "RUNS": os.Getenv("DISPATCH_TUI_E2E_RUNS")},
				RuntimeConstraints: queue.Constraints{VCPUs: 1},
			}, "test")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	r.Run(context.Background()) // until SIGKILL
	return 0
}

// runnerPIDs reads the pid record the runner keeps for each container on
// every local instance (the fifth field of pid_start's first line) and
// returns the live ones: container id -> pid.
func runnerPIDs(stateDir string) map[string]int {
	out := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(stateDir, "local", "instances", "*", "runner", "*", "pid_start"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		line, _, complete := strings.Cut(string(b), "\n")
		fields := strings.Fields(line)
		if !complete || len(fields) < 5 { // optional fields may follow the five
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && alive(pid) {
			out[filepath.Base(filepath.Dir(f))] = pid
		}
	}
	return out
}

func TestLocalSIGKILLedDispatcherReadoptsRunningContainers(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	const n = 20
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "DISPATCH_TUI_E2E_CHILD=1", "DISPATCH_TUI_E2E_STATE="+state,
		"DISPATCH_TUI_E2E_BINARY="+binary, "DISPATCH_TUI_E2E_N="+strconv.Itoa(n), "DISPATCH_TUI_E2E_RUNS="+runs)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed whatever happens: a child left running holds the test's
	// stderr, and go test would wait for it until its timeout.
	t.Cleanup(func() {
		child.Process.Kill()
		child.Wait()
	})
	var before map[string]int
	wait.Until(t, "20 containers running under the first dispatcher", 90*time.Second, func() bool {
		before = runnerPIDs(state)
		return len(before) == n
	})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	// A new dispatcher on the same state re-adopts them.
	r, _ := startEngine(t, e2eConfig(state))
	all, _ := r.Containers(engine.ListOptions{})
	if len(all) != n {
		t.Fatalf("%d containers after restart, want %d", len(all), n)
	}
	ids := make([]string, 0, n)
	for _, c := range all {
		ids = append(ids, c.ID)
	}
	wait.Until(t, "re-adopted as Running with the same pids", 30*time.Second, func() bool {
		for _, id := range ids {
			if p := pidOf(r.Engine, id); p != 0 && p != before[id] {
				t.Fatalf("container %s now has pid %d, was %d: started again", id, p, before[id])
			}
		}
		return countStates(r.Engine, ids)[queue.Running] == n || countStates(r.Engine, ids)[queue.Complete] > 0
	})
	wait.Until(t, "all Complete", 90*time.Second, func() bool { return countStates(r.Engine, ids)[queue.Complete] == n })
	for _, id := range ids {
		c, _ := r.Container(id)
		if c.Attempts != 1 || c.ExitCode == nil || *c.ExitCode != 0 {
			t.Fatalf("%s: attempts %d exit %v, want one attempt exiting 0", id, c.Attempts, c.ExitCode)
		}
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	slices.Sort(lines)
	if len(lines) != n || len(slices.Compact(slices.Clone(lines))) != n {
		t.Fatalf("runs file has %d lines (%d distinct), want each of %d containers exactly once:\n%s", len(lines), len(slices.Compact(lines)), n, b)
	}
}

// e2eToken is the operator token of daemon configs with a TCP listener.
const e2eToken = "e2e-token"

// daemonConfig writes a config file equivalent to e2eConfig(stateDir).
func daemonConfig(t *testing.T, stateDir string) string {
	t.Helper()
	return writeDaemonConfig(t, stateDir, daemonSettings{})
}

// daemonSettings are what daemon configs of these tests differ in; zero
// fields keep e2eConfig's values.
type daemonSettings struct {
	listen        string // "" = the default address
	probeInterval string
	maxProbes     int
	vcpus         int    // of the one instance type ("slot8" unless set)
	extra         string // appended to [containers]
}

func writeDaemonConfig(t *testing.T, stateDir string, s daemonSettings) string {
	t.Helper()
	listen := ""
	if s.listen != "" {
		listen = fmt.Sprintf("listen = %q\ntoken = %q\n", s.listen, e2eToken)
	}
	if s.probeInterval == "" {
		s.probeInterval = "200ms"
	}
	if s.maxProbes == 0 {
		s.maxProbes = 100
	}
	typ := `name = "slot8"
vcpus = 8
ram = "16GiB"
scratch = "10GiB"`
	if s.vcpus > 0 {
		typ = fmt.Sprintf(`name = "big"
vcpus = %d
ram = "1TiB"
scratch = "1TiB"`, s.vcpus)
	}
	body := fmt.Sprintf(`[dispatcher]
%sstate_dir = %q
max_instances = 4
max_containers_per_instance = 0
stale_lock_timeout = "20s"

[cloud]
driver = "local"
runner_path = %q
probe_interval = %q
sync_interval = "1s"
timeout_idle = "1m"
max_concurrent_creates = 4
max_cloud_ops_per_second = 100
max_probes_per_second = %d

[cloud.local]
boot_delay = "100ms"

[[instance_type]]
%s
price = 0.1

[containers]
kill_grace = "1s"
%s`, listen, stateDir, filepath.Join(stateDir, "dispatch-tui-runner"), s.probeInterval, s.maxProbes, typ, s.extra)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDaemonStopsCleanlyOnSignalsLeavingContainersRunning(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			state := t.TempDir()
			// Start containers with an in-process engine, then hand over.
			r, stop := startEngine(t, e2eConfig(state))
			var ids []string
			for i := 0; i < 3; i++ {
				c, err := r.Submit(queue.Spec{Command: []string{"sleep", "30"}, RuntimeConstraints: queue.Constraints{VCPUs: 1}}, "test")
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, c.ID)
			}
			wait.Until(t, "containers running", time.Minute, func() bool { return len(runnerPIDs(state)) == len(ids) })
			stop()

			// A port of its own: never the default one another daemon may hold.
			cfgPath := writeDaemonConfig(t, state, daemonSettings{listen: fmt.Sprintf("127.0.0.1:%d", freeport.For(t))})
			daemon := exec.Command(binary, "--daemon", "--config", cfgPath)
			var logs enginetest.Buffer
			daemon.Stderr = &logs
			if err := daemon.Start(); err != nil {
				t.Fatal(err)
			}
			// Stop it while it is busy re-adopting (not waiting for a state:
			// the stop must be clean whatever it is doing), once it has
			// logged: its signal handler comes first, and a signal before
			// it (a fixed second was not enough at a load of 27) kills the
			// process as the default action does, which no user meets.
			wait.Until(t, "the daemon's first log line", time.Minute, func() bool { return logs.String() != "" })
			sent := time.Now()
			if err := daemon.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := daemon.Wait(); err != nil {
				t.Fatalf("daemon exit: %v\n%s", err, logs.String())
			}
			if took := time.Since(sent); took > 5*time.Second {
				t.Fatalf("daemon took %s to stop", took)
			}
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if !strings.HasPrefix(line, "{") {
					t.Fatalf("daemon log line is not JSON: %q", line)
				}
			}
			if !strings.Contains(logs.String(), `"msg":"daemon stopped"`) {
				t.Fatalf("no clean stop logged:\n%s", logs.String())
			}
			if n := len(runnerPIDs(state)); n != len(ids) {
				t.Fatalf("%d of %d containers still running after the daemon stopped", n, len(ids))
			}
		})
	}
}

// destroyInstances leaves nothing running of cfg's driver: it destroys
// every instance there (and so their containers).
func destroyInstances(cfg *config.Config) {
	d, err := New(Options{Config: cfg, RunnerBinary: binary})
	if err != nil {
		return
	}
	insts, _ := d.Driver.Instances(context.Background(), nil)
	for _, i := range insts {
		i.Destroy(context.Background())
	}
	d.Close()
}
