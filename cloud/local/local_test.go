//go:build unix

package local

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
)

var testType = cloud.InstanceType{Name: "small", ProviderType: "small", VCPUs: 1, RAM: 1 << 30, Price: 0.02}

func newDriver(t *testing.T, dir string, delay time.Duration) *Driver {
	t.Helper()
	d, err := New(Options{Dir: dir, BootDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

func create(t *testing.T, d *Driver, tags cloud.Tags) cloud.Instance {
	t.Helper()
	inst, err := d.Create(context.Background(), testType, tags)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func clientConfig(signer ssh.Signer, hostKey ssh.PublicKey) *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            "dispatch",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
		Timeout:         5 * time.Second,
	}
}

func dial(d *Driver, inst cloud.Instance) (*ssh.Client, error) {
	hk, ok := d.HostKey(inst.ID())
	if !ok {
		return nil, fmt.Errorf("no host key for %s", inst.ID())
	}
	return ssh.Dial("tcp", inst.Address(), clientConfig(d.ClientSigner(), hk))
}

func mustDial(t *testing.T, d *Driver, inst cloud.Instance) *ssh.Client {
	t.Helper()
	c, err := dial(d, inst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// run runs cmd in a new session and returns stdout, stderr and the exit
// status (-1 when the session ended without one).
func run(t *testing.T, c *ssh.Client, cmd, stdin string) (string, string, int) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	if stdin != "" {
		s.Stdin = strings.NewReader(stdin)
	}
	err = s.Run(cmd)
	code := 0
	var ee *ssh.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitStatus()
	case err != nil:
		t.Fatalf("run %q: %v", cmd, err)
	}
	return out.String(), errb.String(), code
}

func TestExecExitStatusAndEnv(t *testing.T) {
	d := newDriver(t, t.TempDir(), 0)
	inst := create(t, d, cloud.Tags{"k": "v"})
	c := mustDial(t, d, inst)

	out, _, code := run(t, c, "echo hi; exit 3", "")
	if out != "hi\n" || code != 3 {
		t.Fatalf("got %q, exit %d; want \"hi\\n\", exit 3", out, code)
	}
	_, errOut, code := run(t, c, "echo oops >&2", "")
	if errOut != "oops\n" || code != 0 {
		t.Fatalf("stderr %q exit %d", errOut, code)
	}

	home := filepath.Join(inst.(*Instance).Dir(), "home")
	// pwd prints the directory as the kernel has it: with TMPDIR behind a
	// symlink (make test's), that is the resolved path.
	cwd, err := filepath.EvalSymlinks(home)
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ = run(t, c, `pwd; echo "$HOME"; echo "$`+RunnerDirEnv+`"`, "")
	want := cwd + "\n" + home + "\n" + filepath.Join(inst.(*Instance).Dir(), "runner") + "\n"
	if out != want {
		t.Fatalf("env: got %q, want %q", out, want)
	}

	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Setenv("FOO", "bar baz"); err != nil {
		t.Fatal(err)
	}
	b, err := s.Output(`echo "$FOO"`)
	if err != nil || string(b) != "bar baz\n" {
		t.Fatalf("env request: %q %v", b, err)
	}
}

func TestStdinAndConcurrentSessions(t *testing.T) {
	d := newDriver(t, t.TempDir(), 0)
	inst := create(t, d, nil)
	c := mustDial(t, d, inst)

	if out, _, code := run(t, c, "cat", "hello\nworld\n"); out != "hello\nworld\n" || code != 0 {
		t.Fatalf("cat: %q exit %d", out, code)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.NewSession()
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			in := strings.Repeat(strconv.Itoa(i), 100000)
			s.Stdin = strings.NewReader(in)
			out, err := s.Output("cat")
			if err != nil {
				errs <- err
				return
			}
			if string(out) != in {
				errs <- fmt.Errorf("session %d: got %d bytes back, want %d", i, len(out), len(in))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestWrongKeysRefused(t *testing.T) {
	d := newDriver(t, t.TempDir(), 0)
	inst := create(t, d, nil)
	hk, _ := d.HostKey(inst.ID())

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := ssh.Dial("tcp", inst.Address(), clientConfig(other, hk)); err == nil {
		c.Close()
		t.Fatal("wrong client key accepted")
	}
	if c, err := ssh.Dial("tcp", inst.Address(), clientConfig(d.ClientSigner(), other.PublicKey())); err == nil {
		c.Close()
		t.Fatal("client accepted a different host key")
	}
	// Another instance's host key is also wrong.
	inst2 := create(t, d, nil)
	if c, err := ssh.Dial("tcp", inst2.Address(), clientConfig(d.ClientSigner(), hk)); err == nil {
		c.Close()
		t.Fatal("client accepted another instance's host key")
	}
	mustDial(t, d, inst)
}

func TestTagsPersistAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, dir, 0)
	tags := cloud.Tags{cloud.TagInstanceType: "small", cloud.TagSecret: "s3cret", cloud.TagOwner: "me"}
	inst := create(t, d, tags)
	other := create(t, d, cloud.Tags{cloud.TagOwner: "someone-else"})
	id := inst.ID()
	hk, _ := d.HostKey(id)

	if !strings.HasPrefix(string(id), "local-") || len(id) != len("local-")+8 {
		t.Fatalf("bad id %q", id)
	}
	secret, err := os.ReadFile(filepath.Join(dir, "instances", string(id), "home", ".dispatch-tui-secret"))
	if err != nil || string(secret) != "s3cret" {
		t.Fatalf("secret file: %q %v", secret, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "instances", string(id), "host_key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("host_key: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "client_key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("client_key: %v %v", fi, err)
	}

	tags["extra"] = "1"
	if err := inst.SetTags(context.Background(), tags); err != nil {
		t.Fatal(err)
	}
	d.Stop()

	d2 := newDriver(t, dir, 0)
	if !bytes.Equal(d2.ClientSigner().PublicKey().Marshal(), d.ClientSigner().PublicKey().Marshal()) {
		t.Fatal("client key changed across restart")
	}
	list, err := d2.Instances(context.Background(), cloud.Tags{cloud.TagOwner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID() != id {
		t.Fatalf("Instances(owner=me) = %v", list)
	}
	got := list[0].Tags()
	if len(got) != len(tags) {
		t.Fatalf("tags after restart %v, want %v", got, tags)
	}
	for k, v := range tags {
		if got[k] != v {
			t.Fatalf("tags after restart %v, want %v", got, tags)
		}
	}
	if list[0].ProviderType() != "small" {
		t.Fatalf("provider type %q", list[0].ProviderType())
	}
	all, _ := d2.Instances(context.Background(), nil)
	if len(all) != 2 {
		t.Fatalf("Instances(nil) = %v, want 2 (incl. %s)", all, other.ID())
	}
	hk2, ok := d2.HostKey(id)
	if !ok || !bytes.Equal(hk.Marshal(), hk2.Marshal()) {
		t.Fatal("host key changed across restart")
	}
	c := mustDial(t, d2, list[0])
	if out, _, code := run(t, c, "cat .dispatch-tui-secret", ""); out != "s3cret" || code != 0 {
		t.Fatalf("after restart: %q exit %d", out, code)
	}
}

func TestDestroy(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, dir, 0)
	inst := create(t, d, cloud.Tags{"a": "b"})
	keep := create(t, d, cloud.Tags{"a": "b"})
	idir := inst.(*Instance).Dir()

	// A "container" recorded the way the runner does: its own session and
	// pid_start (start ticks, start time, supervisor, pid) under
	// <instance>/runner/<id>/.
	sleeper := exec.Command("sleep", "300")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill() })
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	cdir := filepath.Join(idir, "runner", "c1")
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper.Process.Pid))
	if err != nil {
		t.Skip("no /proc: ", err)
	}
	ticks := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[19] // field 22: starttime
	record := fmt.Sprintf("%s 2026-01-01T00:00:00Z 0 - %d\n", ticks, sleeper.Process.Pid)
	if err := os.WriteFile(filepath.Join(cdir, "pid_start"), []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}

	// A session command still running.
	c := mustDial(t, d, inst)
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	sessDone := make(chan error, 1)
	var out enginetest.Buffer
	s.Stdout = &out
	if err := s.Start("echo started; exec sleep 300"); err != nil {
		t.Fatal(err)
	}
	go func() { sessDone <- s.Wait() }()
	wait.With{Seen: out.String}.Until(t, "the session command to start", 10*time.Second, func() bool { return strings.Contains(out.String(), "started") })

	if err := inst.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(wait.Budget(10 * time.Second)):
		t.Fatal("runner container not killed by Destroy")
	}
	select {
	case <-sessDone:
	case <-time.After(wait.Budget(10 * time.Second)):
		t.Fatal("session not ended by Destroy")
	}
	if _, err := os.Stat(idir); !os.IsNotExist(err) {
		t.Fatalf("instance dir still there: %v", err)
	}
	list, _ := d.Instances(context.Background(), nil)
	if len(list) != 1 || list[0].ID() != keep.ID() {
		t.Fatalf("Instances after destroy = %v", list)
	}
	if _, ok := d.HostKey(inst.ID()); ok {
		t.Fatal("destroyed instance still has a host key")
	}
	if err := inst.Destroy(context.Background()); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
	if _, err := dial(d, keep); err != nil {
		t.Fatalf("other instance: %v", err)
	}
	// A new driver does not find it either.
	d.Stop()
	d2 := newDriver(t, dir, 0)
	if list, _ := d2.Instances(context.Background(), nil); len(list) != 1 {
		t.Fatalf("after restart: %v", list)
	}
}

func TestBootDelay(t *testing.T) {
	d := newDriver(t, t.TempDir(), 2*time.Second)
	start := time.Now()
	inst := create(t, d, nil)
	if time.Since(start) > time.Second {
		t.Fatalf("Create blocked for %v", time.Since(start))
	}
	c, err := dial(d, inst)
	if err == nil {
		c.Close()
		if time.Since(start) < 2*time.Second {
			t.Fatal("connection accepted before the boot delay")
		}
	}
	var dialErr error
	seen := func() string { return fmt.Sprint(dialErr) }
	wait.With{Seen: seen}.Until(t, "the instance reachable", 20*time.Second, func() bool {
		c, err := dial(d, inst)
		if dialErr = err; err != nil {
			return false
		}
		c.Close()
		return true
	})
	if time.Since(start) < 2*time.Second {
		t.Fatal("reachable before the boot delay")
	}
}

func TestStopLeavesInstances(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, dir, 0)
	inst := create(t, d, nil)
	c := mustDial(t, d, inst)
	run(t, c, "true", "")
	d.Stop()
	d.Stop() // idempotent
	if _, err := os.Stat(filepath.Join(inst.(*Instance).Dir(), "tags.json")); err != nil {
		t.Fatalf("instance gone after Stop: %v", err)
	}
	if c, err := dial(d, inst); err == nil {
		c.Close()
		t.Fatal("server still accepting after Stop")
	}
	if _, err := d.Create(context.Background(), testType, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("Create after Stop: %v", err)
	}
}
