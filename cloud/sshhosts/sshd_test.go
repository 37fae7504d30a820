//go:build linux

package sshhosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/sshexec"
)

// TestEngineOnRealSSHD runs the real Engine, with the real runner binary,
// on three hosts served by real OpenSSH sshd processes.
func TestEngineOnRealSSHD(t *testing.T) {
	t.Parallel()
	env := newSSHDEnv(t, 3)
	_, bin, hash := dispatchBinary(t)
	logger := testLogger(t)

	cfg, hosts := env.engineConfig(t)
	cfg.Dispatcher.MaxContainersPerInstance = 1
	// Each host installs the 78 MB runner through sshd: at a load of 30 an
	// install missed the fixed minute of a slow call, and the host was
	// given up before it ran anything. The deadline scales with the load
	// as the tests' waits do.
	cfg.Cloud.TimeoutRunnerCall = wait.Budget(time.Minute)
	drv := newDriver(t, cfg, hosts, hash, "", logger)

	newEngine := func() *engine.Engine {
		t.Helper()
		eng, err := engine.New(engine.Options{
			Config: cfg, InstanceSet: drv, NewExecutor: drv.Executor, Logger: logger,
			RunnerHash: hash, RunnerBinary: func() ([]byte, error) { return bin, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := newEngine()
	t.Cleanup(func() { eng.Close() }) // the current engine (a second one after the restart below)

	dump := func() string {
		var b strings.Builder
		for _, v := range eng.Instances() {
			fmt.Fprintf(&b, "\n  instance %s %s containers=%v last_error=%q", v.ID, v.State, v.Containers, v.LastError)
		}
		cs, _ := eng.Containers(engine.ListOptions{})
		for _, c := range cs {
			code := "-"
			if c.ExitCode != nil {
				code = fmt.Sprint(*c.ExitCode)
			}
			fmt.Fprintf(&b, "\n  container %s %s exit=%s inst=%s attempts=%d reason=%q", c.ID, c.State, code, c.InstanceID, c.Attempts, c.Reason)
		}
		return b.String() + "\n" + env.logs()
	}
	// The engine is stepped in real time between polls.
	stepped := wait.With{Step: func() { eng.Step(); eng.Settle() }, Seen: dump}
	type job struct {
		id   string
		code int
	}
	submit := func(n, base, maxAttempts int) []job {
		t.Helper()
		var jobs []job
		for i := range n {
			code := (base + i) % 7
			c, err := eng.Submit(queue.Spec{
				Name:               fmt.Sprintf("job-%d", base+i),
				Command:            []string{"sh", "-c", `echo "$X"; sleep 0.5; exit "$X"`},
				Env:                map[string]string{"X": fmt.Sprint(code)},
				RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 256 << 20},
				MaxAttempts:        maxAttempts,
			}, "test")
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job{c.ID, code})
		}
		return jobs
	}
	final := func(jobs []job) func() bool {
		return func() bool {
			for _, j := range jobs {
				if c, ok := eng.Container(j.id); !ok || !c.State.Final() {
					return false
				}
			}
			return true
		}
	}
	// check asserts every job completed with its exit code and returns the
	// instances they ran on.
	check := func(jobs []job) map[string]int {
		t.Helper()
		used := map[string]int{}
		for _, j := range jobs {
			c, _ := eng.Container(j.id)
			if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != j.code {
				t.Fatalf("container %s: state %s exit %v, want Complete with exit %d:%s", j.id, c.State, c.ExitCode, j.code, dump())
			}
			used[c.InstanceID]++
		}
		return used
	}

	// 1. Six containers, one per instance at a time: all three hosts are
	// claimed and used, every exit code comes back.
	jobs := submit(6, 0, 3)
	t0 := time.Now()
	stepped.Until(t, "six containers final", 3*time.Minute, final(jobs))
	t.Logf("phase 1: %s", time.Since(t0).Round(time.Millisecond))
	used := check(jobs)
	if len(used) != 3 {
		t.Fatalf("containers ran on %v, want all three hosts:%s", used, dump())
	}
	for _, s := range env.servers {
		if used[string(InstanceID(s.addr))] == 0 {
			t.Fatalf("host %s not used: %v", s.addr, used)
		}
	}

	// 2. The runner was deployed once per host; a new engine on the same
	// state and hosts re-adopts them and deploys nothing.
	if n := eng.PoolStats().RunnerDeploys; n != len(used) {
		t.Fatalf("runner deployed %d times, want once per host used (%d)", n, len(used))
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	eng = newEngine()
	for _, j := range jobs { // the store kept them
		if c, ok := eng.Container(j.id); !ok || c.State != queue.Complete {
			t.Fatalf("after restart container %s is %v", j.id, c.State)
		}
	}
	jobs2 := submit(3, 6, 3)
	t0 = time.Now()
	stepped.Until(t, "three more containers final", 3*time.Minute, final(jobs2))
	t.Logf("phase 2: %s", time.Since(t0).Round(time.Millisecond))
	check(jobs2)
	if n := eng.PoolStats().RunnerDeploys; n != 0 {
		t.Fatalf("the restarted engine deployed the runner %d times, want 0", n)
	}

	// 3. A host comes back with another host key: refused, shown on the
	// instance, and nothing starts there. (The host whose id sorts last:
	// see the note on start attempts below.)
	bad, badDir := env.servers[0], cfg.Cloud.SSHHosts.Hosts[0].WorkDir
	for i, s := range env.servers {
		if InstanceID(s.addr) > InstanceID(bad.addr) {
			bad, badDir = s, cfg.Cloud.SSHHosts.Hosts[i].WorkDir
		}
	}
	badID := string(InstanceID(bad.addr))
	t0 = time.Now()
	bad.restartWithNewKey()
	stepped.Until(t, "host key error on "+badID, 3*time.Minute, func() bool {
		v, ok := eng.Instance(badID)
		return ok && strings.Contains(v.LastError, "host key")
	})
	v, _ := eng.Instance(badID)
	t.Logf("instance %s: state %s, last_error: %s", badID, v.State, v.LastError)
	if !strings.Contains(v.LastError, "changed") {
		t.Errorf("last_error %q does not say the host key changed", v.LastError)
	}
	insts, err := drv.Instances(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var badInst cloud.Instance
	for _, i := range insts {
		if string(i.ID()) == badID {
			badInst = i
		}
	}
	if badInst == nil {
		t.Fatalf("the host with a changed key is no longer listed (%d listed); it must stay listed", len(insts))
	}
	ex, err := drv.Executor(badInst)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ex.Execute(context.Background(), "true", nil)
	ex.Close()
	if !errors.Is(err, sshexec.ErrHostKey) {
		t.Fatalf("executor on the changed host: %v, want ErrHostKey", err)
	}

	// The scheduler still offers containers to an idle instance whose
	// probes fail, and each refused start costs the container an attempt
	// (a known engine limitation, not the driver's), so these get plenty.
	before := eng.PoolStats()
	jobs3 := submit(4, 9, 1000)
	stepped.Until(t, "containers final with "+badID+" refused", 3*time.Minute, final(jobs3))
	t.Logf("phase 3: %s", time.Since(t0).Round(time.Millisecond))
	used3 := check(jobs3)
	if used3[badID] > 0 {
		t.Fatalf("containers ran on the host with the changed key: %v", used3)
	}
	if n := eng.PoolStats().StartFailures - before.StartFailures; n > 0 {
		t.Logf("%d start attempts were made on the refused host, all refused before reaching it", n)
	}
	if v, _ := eng.Instance(badID); len(v.Containers) != 0 {
		t.Fatalf("instance %s with a refused host key has containers %v", badID, v.Containers)
	}
	// Nothing reached the host: its runner has no trace of these containers.
	ents, _ := os.ReadDir(filepath.Join(badDir, RunnerDir))
	for _, e := range ents {
		for _, j := range jobs3 {
			if e.Name() == j.id {
				t.Fatalf("container %s reached the runner of the host with the changed key", j.id)
			}
		}
	}
}
