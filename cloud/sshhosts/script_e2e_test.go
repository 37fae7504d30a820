//go:build linux

package sshhosts

// The script driver (cloud/script) end to end. It lives here to reuse this
// package's sshd and network-namespace fixtures: the test scripts
// (cloud/script/testdata/fakecloud) "create" instances by handing out sshd
// hosts in namespaces of the test's own, each logging sessions into a
// home of its own (a ForceCommand), where the create writes the secret
// from user_data and whose processes destroy kills, as a power-off would.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/script"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner/agent"
	"dispatch-tui/engine/worker"
)

// scriptCloud is the fake cloud's state and the hosts it hands out.
type scriptCloud struct {
	t     *testing.T
	sshd  *sshdEnv
	dir   string // FAKECLOUD_DIR
	homes []string
}

// newScriptCloud starts n namespace sshd hosts whose sessions run in
// homes/hostN, and lists them as the fake cloud's free addresses.
func newScriptCloud(t *testing.T, n int) *scriptCloud {
	t.Helper()
	for _, tool := range []string{"jq", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " not found: the script driver's test scripts need it (.ci/run installs jq)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	pn := newPartitionNet(t, n)
	env := newSSHDEnvAt(t, n, func(i int) (string, string) { return pn.netns[i], pn.ips[i] })
	sc := &scriptCloud{t: t, sshd: env, dir: filepath.Join(env.dir, "cloud")}
	var addrs strings.Builder
	for i, s := range env.servers {
		home := filepath.Join(env.dir, "homes", fmt.Sprintf("host%d", i))
		login := filepath.Join(s.dir, "login")
		// Until a create makes the home, the host is "off". The runner
		// keeps its state in the home too, as on a machine of its own
		// (its default is in /tmp, which the hosts share).
		wrapper := "#!/bin/sh\ncd '" + home + "' 2>/dev/null || { echo 'host is off' >&2; exit 1; }\n" +
			"HOME='" + home + "' " + agent.StateDirEnv + "='" + home + "/runner.d'\nexport HOME " + agent.StateDirEnv + "\n" +
			"exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n"
		if err := os.WriteFile(login, []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		s.stop()
		s.extraConfig = "ForceCommand " + login + "\n"
		s.start()
		sc.homes = append(sc.homes, home)
		fmt.Fprintf(&addrs, "%s %s\n", s.addr, home)
	}
	if err := os.MkdirAll(filepath.Join(sc.dir, "faults"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sc.dir, "addresses"), []byte(addrs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return sc
}

// fault queues faults for the next calls of verb.
func (sc *scriptCloud) fault(verb string, faults ...string) {
	sc.t.Helper()
	if err := os.WriteFile(filepath.Join(sc.dir, "faults", verb), []byte(strings.Join(faults, "\n")+"\n"), 0o644); err != nil {
		sc.t.Fatal(err)
	}
}

// instances is how many instances the fake cloud holds.
func (sc *scriptCloud) instances() int {
	m, _ := filepath.Glob(filepath.Join(sc.dir, "instances", "*.json"))
	return len(m)
}

// config is [cloud.script] on the fake cloud, for the engine.
func (sc *scriptCloud) config(t *testing.T) *config.Config {
	t.Helper()
	fc, err := filepath.Abs("../script/testdata/fakecloud")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Dispatcher.StateDir = t.TempDir()
	cfg.Dispatcher.MaxInstances = len(sc.homes)
	cfg.Cloud.Driver = "script"
	cfg.Cloud.Script = config.ScriptDriver{
		Create: []string{fc, script.VerbCreate}, List: []string{fc, script.VerbList},
		Destroy: []string{fc, script.VerbDestroy}, SetTags: []string{fc, script.VerbSetTags},
		Env: []string{"PATH", "FAKECLOUD_DIR=" + sc.dir, "FAKECLOUD_AUTHORIZED_KEYS=" + filepath.Join(sc.sshd.dir, "authorized_keys")},
		// Short, for the hanging create, but not so short that a list
		// (sh, flock and jq) is killed on a loaded machine: at 3 s, at a
		// load of 40, most were.
		Timeout:   20 * time.Second,
		AdminUser: sc.sshd.user,
	}
	cfg.Cloud.SSHPort = 2222
	cfg.Cloud.RunnerPath = "./dispatch-tui-runner"
	// Each step is a second of the fake clock, and a probe an SSH round
	// trip per host that the step waits for: not every step.
	cfg.Cloud.ProbeInterval = 5 * time.Second
	// Each listing runs the script (jq and all): not every few steps.
	cfg.Cloud.SyncInterval = 20 * time.Second
	cfg.Cloud.TimeoutIdle = 30 * time.Second
	cfg.Cloud.MaxCloudOpsPerSecond = 100
	cfg.Cloud.MaxProbesPerSecond = 100
	cfg.Cloud.MaxConcurrentCreates = 1 // the faults meet the creates in order
	cfg.InstanceTypes = []cloud.InstanceType{{Name: "small", ProviderType: "n1-small", VCPUs: 2, RAM: 2 << 30, Price: 0.1}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestScriptDriverEngine runs the engine on the script driver over real
// sshd hosts on a fake clock. The creates meet, in turn: no capacity, the
// quota, a rate limit, a permanent refusal, an unknown failure, garbage
// on stdout, a hang, an instance made but not reported, and an id that
// never shows up in list. Each becomes an event that says what the
// command said, the pool backs off as for a built-in driver, the
// unreported instance is adopted and runs a container, the phantom one is
// given up and destroyed, and in the end the idle instances are destroyed
// through the script and nothing is left running.
func TestScriptDriverEngine(t *testing.T) {
	t.Parallel()
	sc := newScriptCloud(t, 2)
	cfg := sc.config(t)
	_, bin, hash := dispatchBinary(t)
	logger := testLogger(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Cloud.Script
	drv, err := script.New(script.Options{
		Create: s.Create, List: s.List, Destroy: s.Destroy, SetTags: s.SetTags,
		Env: s.Env, Timeout: s.Timeout, Signer: signer, AdminUser: s.AdminUser,
		SSHPort: cfg.Cloud.SSHPort, ListGrace: 2 * time.Minute, Now: clk.Now, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	sc.fault(script.VerbCreate, "capacity", "quota", "ratelimit", "permanent", "unknown", "garbage", "hang", "unreported", "phantom")
	eng, err := engine.New(engine.Options{
		Config: cfg, InstanceSet: drv, NewExecutor: drv.Executor, Logger: logger, Clock: clk,
		RunnerHash: hash, RunnerBinary: func() ([]byte, error) { return bin, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Close()
		// Whatever the test left, the fake cloud powers off.
		insts, _ := drv.Instances(context.Background(), nil)
		for _, inst := range insts {
			inst.Destroy(context.Background())
		}
	})

	markers, gates := filepath.Join(sc.sshd.dir, "markers"), filepath.Join(sc.sshd.dir, "gates")
	for _, d := range []string{markers, gates} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for _, name := range []string{"a", "b"} {
		c, err := eng.Submit(gatedSpec(markers, gates, name, 3), "test")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}

	dump := func() string {
		var b strings.Builder
		for _, v := range eng.Instances() {
			fmt.Fprintf(&b, "\n  instance %s %s %s containers=%v last_error=%q", v.ID, v.Address, v.State, v.Containers, v.LastError)
		}
		for _, id := range ids {
			c, _ := eng.Container(id)
			fmt.Fprintf(&b, "\n  container %s %s %s inst=%s reason=%q", c.ID, c.Name, c.State, c.InstanceID, c.Reason)
		}
		evs, _ := eng.Events(0, 10000)
		for _, ev := range evs {
			fmt.Fprintf(&b, "\n  event %s %s %s %s: %s", ev.Time.Format(time.TimeOnly), ev.Kind, ev.Target, ev.Action, ev.Reason)
		}
		b.WriteString("\n  fake cloud calls:\n")
		calls, _ := os.ReadFile(filepath.Join(sc.dir, "calls"))
		b.Write(calls)
		return b.String()
	}
	// Each step is a second of the fake clock; the deadline is real time
	// on a loaded machine.
	stepped := wait.With{
		Step: func() {
			eng.Step()
			eng.Settle()
			clk.Advance(time.Second)
			time.Sleep(5 * time.Millisecond) // let the hosts' processes run
		},
		Seen: func() string { return "fake clock at " + clk.Now().Format(time.TimeOnly) + dump() },
	}
	running := func(id string) func() bool {
		return func() bool {
			c, _ := eng.Container(id)
			return c.State == queue.Running && gatedRuns(t, markers, c.Name) > 0
		}
	}
	stepped.Until(t, "both containers running", 3*time.Minute, func() bool { return running(ids[0])() && running(ids[1])() })

	// The create errors, as events, in order, each kept apart from the
	// next by the pool's back-off for its kind.
	evs, _ := eng.Events(0, 10000)
	var errs []queue.Event
	for _, ev := range evs {
		if ev.Kind == worker.EventCloudError && strings.HasPrefix(ev.Reason, "create small") {
			errs = append(errs, ev)
		}
	}
	fc := cfg.Cloud.Script.Create[0]
	want := []struct {
		kind, says string
		pause      time.Duration // at least this long before the next create
	}{
		{"capacity", "no capacity for n1-small", time.Minute},
		{"quota", "quota exceeded: 0 of 0 instances left", time.Minute},
		{"rate_limit", "throttled, slow down", 7 * time.Second},
		{"permanent", "credentials rejected", 5 * time.Minute},
		{"other", `boom: the API said \x1b[31mno\x1b[0m`, 0},
		{"other", "printed no JSON object on stdout", 0},
		{"other", fmt.Sprintf("did not finish within %s and was killed", cfg.Cloud.Script.Timeout), 0},
		{"other", "lost the reply", 0},
	}
	if len(errs) != len(want) {
		t.Fatalf("%d create errors, want %d:%s", len(errs), len(want), dump())
	}
	for i, w := range want {
		r := errs[i].Reason
		if !strings.Contains(r, "failed ("+w.kind+")") || !strings.Contains(r, w.says) || !strings.Contains(r, fc) {
			t.Errorf("create error %d: %q, want kind %s saying %q and naming %s", i, r, w.kind, w.says, fc)
		}
		if i+1 < len(errs) && errs[i+1].Time.Sub(errs[i].Time) < w.pause {
			t.Errorf("create error %d (%s) at %s, the next create at %s: want a pause of %s", i, w.kind, errs[i].Time.Format(time.TimeOnly), errs[i+1].Time.Format(time.TimeOnly), w.pause)
		}
	}

	// The phantom instance (create said i-phantom, list never shows it)
	// is given up and destroyed; the unreported one was adopted.
	stepped.Until(t, "the phantom instance given up", 3*time.Minute, func() bool {
		evs, _ := eng.Events(0, 10000)
		for _, ev := range evs {
			if ev.Kind == worker.EventCloudError && strings.Contains(ev.Reason, "i-phantom") && strings.Contains(ev.Reason, "has not printed within 2m0s") {
				return true
			}
		}
		return false
	})
	calls, _ := os.ReadFile(filepath.Join(sc.dir, "calls"))
	if !strings.Contains(string(calls), "destroy") {
		t.Errorf("i-phantom was not destroyed; calls:\n%s", calls)
	}

	for _, name := range []string{"a", "b"} {
		openGate(t, gates, name)
	}
	stepped.Until(t, "both containers complete", 3*time.Minute, func() bool {
		for _, id := range ids {
			if c, _ := eng.Container(id); c.State != queue.Complete {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		out, err := eng.Logs(context.Background(), id, 0)
		c, _ := eng.Container(id)
		if err != nil || !strings.Contains(string(out.Data), "hello from "+c.Name) {
			t.Errorf("output of %s: %q, %v", c.Name, out.Data, err)
		}
	}
	stepped.Until(t, "the idle instances destroyed through the script", 3*time.Minute, func() bool { return sc.instances() == 0 && len(eng.Instances()) == 0 })
	for _, home := range sc.homes {
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Errorf("host home %s is still there after destroy (%v)", home, err)
		}
	}
}
