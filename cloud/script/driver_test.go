//go:build unix

package script

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/wait"
)

// requireTools fails under CI=true, and skips elsewhere, when the fake
// cloud's tools are missing.
func requireTools(t *testing.T) {
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
}

// fake is a driver on testdata/fakecloud with its state in dir.
type fake struct {
	t   *testing.T
	dir string
	clk *clock.Fake
	d   *Driver
}

func fakecloudPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/fakecloud")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newFake(t *testing.T, tune func(*Options)) *fake {
	t.Helper()
	requireTools(t)
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	fc := fakecloudPath(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	opts := Options{
		Create: []string{fc, VerbCreate}, List: []string{fc, VerbList},
		Destroy: []string{fc, VerbDestroy}, SetTags: []string{fc, VerbSetTags},
		Env:     []string{"PATH", "FAKECLOUD_DIR=" + dir},
		Timeout: 20 * time.Second, Signer: signer, SSHPort: 2222, Now: clk.Now,
	}
	if tune != nil {
		tune(&opts)
	}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return &fake{t: t, dir: dir, clk: clk, d: d}
}

// fault queues faults for the next calls of verb.
func (f *fake) fault(verb string, faults ...string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Join(f.dir, "faults"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	p := filepath.Join(f.dir, "faults", verb)
	old, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(old, []byte(strings.Join(faults, "\n")+"\n")...), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fake) calls() string {
	b, _ := os.ReadFile(filepath.Join(f.dir, "calls"))
	return string(b)
}

// stored reads the fake cloud's record of instance id (nil if none).
func (f *fake) stored(id cloud.InstanceID) map[string]any {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "instances", string(id)+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		f.t.Fatal(err)
	}
	return m
}

var small = cloud.InstanceType{Name: "small", ProviderType: "n1-small", VCPUs: 2, RAM: 4 << 30, Price: 0.1, Labels: map[string]string{"zone": "a"}}

func ownTags(owner string) cloud.Tags {
	return cloud.Tags{cloud.TagOwner: owner, cloud.TagInstanceType: "small", cloud.TagSecret: "0123abcd"}
}

func (f *fake) list(filter cloud.Tags) []cloud.Instance {
	f.t.Helper()
	insts, err := f.d.Instances(context.Background(), filter)
	if err != nil {
		f.t.Fatal(err)
	}
	return insts
}

func ids(insts []cloud.Instance) []string {
	var out []string
	for _, i := range insts {
		out = append(out, string(i.ID()))
	}
	return out
}

func TestCreateListTagsDestroy(t *testing.T) {
	f := newFake(t, nil)
	if err := os.WriteFile(filepath.Join(f.dir, "addresses"), []byte("10.9.0.5 "+filepath.Join(f.dir, "home5")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inst, err := f.d.Create(ctx, small, ownTags("me"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Address() != "10.9.0.5:2222" || inst.ProviderType() != "n1-small" {
		t.Fatalf("created %s: address %q, provider type %q; want 10.9.0.5:2222 (ssh_port added), n1-small", inst.ID(), inst.Address(), inst.ProviderType())
	}
	// What create was handed: the key, and user_data that gives it and
	// the secret to the admin user.
	secret, err := os.ReadFile(filepath.Join(f.dir, "home5", ".dispatch-tui-secret"))
	if err != nil || strings.TrimSpace(string(secret)) != "0123abcd" {
		t.Fatalf("the secret user_data carries: %q, %v; want 0123abcd", secret, err)
	}
	other, err := f.d.Create(ctx, small, ownTags("someone-else"))
	if err != nil {
		t.Fatal(err)
	}

	got := f.list(cloud.Tags{cloud.TagOwner: "me"})
	if len(got) != 1 || got[0].ID() != inst.ID() {
		t.Fatalf("listing owner me: %v, want only %s", ids(got), inst.ID())
	}
	if all := f.list(nil); len(all) != 2 {
		t.Fatalf("listing every owner: %v, want %s and %s", ids(all), inst.ID(), other.ID())
	}
	if got[0].Tags()[cloud.TagSecret] != "0123abcd" {
		t.Fatalf("tags did not round-trip: %v", got[0].Tags())
	}

	newTags := ownTags("me")
	newTags[cloud.TagIdleBehavior] = "hold"
	if err := got[0].SetTags(ctx, newTags); err != nil {
		t.Fatal(err)
	}
	stored := f.stored(inst.ID())["tags"].(map[string]any)
	if stored[cloud.TagIdleBehavior] != "hold" {
		t.Fatalf("set_tags did not reach the cloud: %v", stored)
	}
	if again := f.list(cloud.Tags{cloud.TagOwner: "me"}); again[0].Tags()[cloud.TagIdleBehavior] != "hold" {
		t.Fatalf("tags after set_tags and a listing: %v", again[0].Tags())
	}

	if err := got[0].Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if f.stored(inst.ID()) != nil {
		t.Fatal("destroy left the instance in the cloud")
	}
	if err := got[0].Destroy(ctx); err != nil {
		t.Fatalf("destroying a gone instance: %v", err)
	}
	if left := f.list(cloud.Tags{cloud.TagOwner: "me"}); len(left) != 0 {
		t.Fatalf("listed after destroy: %v", ids(left))
	}
}

func TestCreateInput(t *testing.T) {
	requireTools(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "input.json")
	f := newFake(t, func(o *Options) {
		o.Create = []string{"/bin/sh", "-c", `cat >"$OUT" && echo '{"id": "i-1", "address": "[::1]:22"}'`}
		o.Env = []string{"OUT=" + out}
		o.AdminUser = "ops"
	})
	if _, err := f.d.Create(context.Background(), small, ownTags("me")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var in createInput
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("create's stdin is not JSON: %v\n%s", err, b)
	}
	user, key, secret, ok := ec2.ParseUserData([]byte(in.UserData))
	switch {
	case in.Type != "small" || in.InstanceType.ProviderType != "n1-small" || in.InstanceType.VCPUs != 2 || in.InstanceType.Labels["zone"] != "a":
		t.Fatalf("create input names the type wrong: %s", b)
	case in.Tags[cloud.TagOwner] != "me":
		t.Fatalf("create input lacks the tags: %s", b)
	case !ok || user != "ops" || key != in.PublicKey || secret != "0123abcd" || !strings.HasPrefix(in.PublicKey, "ssh-ed25519 "):
		t.Fatalf("user_data does not hand over the key and secret: user %q key %q secret %q (public_key %q)", user, key, secret, in.PublicKey)
	}
}

// TestEnvironmentOnlyListed: a command sees the variables env lists and
// the DISPATCH_TUI_* ones, not the dispatcher's others.
func TestEnvironmentOnlyListed(t *testing.T) {
	requireTools(t)
	t.Setenv("SCRIPT_TEST_PRIVATE", "not for scripts")
	t.Setenv("SCRIPT_TEST_PASSED", "passed")
	f := newFake(t, func(o *Options) {
		o.List = []string{"/usr/bin/env"}
		o.Env = []string{"SCRIPT_TEST_PASSED", "SCRIPT_TEST_SET=set", "SCRIPT_TEST_UNSET"}
		o.Timeout = 90 * time.Second
	})
	stdout, err := f.d.run(context.Background(), VerbList, "", listInput{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(stdout))
	want := []string{"SCRIPT_TEST_PASSED=passed", "SCRIPT_TEST_SET=set", EnvVerb + "=list", EnvTimeout + "=90"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("environment of a command:\n%s\nwant exactly %v", stdout, want)
	}
}

func TestErrorKinds(t *testing.T) {
	f := newFake(t, nil)
	f.fault(VerbCreate, "capacity", "capacity-all", "quota", "ratelimit", "permanent", "unknown")
	ctx := context.Background()
	create := func() error {
		_, err := f.d.Create(ctx, small, ownTags("me"))
		if err == nil {
			t.Fatal("create succeeded despite its fault")
		}
		if !strings.Contains(err.Error(), "create command \""+fakecloudPath(t)+"\"") {
			t.Errorf("error does not name the command: %v", err)
		}
		return err
	}
	if ce, ok := cloud.AsCapacity(create()); !ok || ce.InstanceType != "n1-small" || !strings.Contains(ce.Error(), "no capacity for n1-small") {
		t.Errorf("exit 10: %v, want capacity for n1-small with the stderr line", ce)
	}
	if ce, ok := cloud.AsCapacity(create()); !ok || ce.InstanceType != "" {
		t.Errorf("exit 11: %v, want capacity of the whole provider", ce)
	}
	if err := create(); !cloud.IsQuota(err) {
		t.Errorf("exit 12: %v, want quota", err)
	}
	if rl, ok := cloud.AsRateLimit(create()); !ok || !rl.RetryAfter.Equal(f.clk.Now().Add(7*time.Second)) {
		t.Errorf("exit 13 with retry-after: 7: %v, want a rate limit until now+7s", rl)
	}
	if err := create(); !cloud.IsPermanent(err) || !strings.Contains(err.Error(), "credentials rejected") {
		t.Errorf("exit 14: %v, want permanent with the stderr line", err)
	}
	err := create()
	if kind := cloud.ErrorKind(err); kind != "other" || !strings.HasSuffix(err.Error(), `exited 3: boom: the API said \x1b[31mno\x1b[0m`) {
		t.Errorf("exit 3: %s error %q, want a plain error ending in the last stderr line, escaped", kind, err)
	}
}

func TestRetryAfterForms(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"retry-after: 12\n":             12 * time.Second,
		"x\nRetry-After: 2m\nthrottled": 2 * time.Minute,
		"throttled":                     DefaultRetryAfter,
		"retry-after: soon":             DefaultRetryAfter,
		"retry-after: 99999":            time.Hour,
	} {
		if got := retryAfter([]byte(in)); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestBadScripts(t *testing.T) {
	ctx := context.Background()
	t.Run("not executable", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "create.sh")
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '{}'\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f := newFake(t, func(o *Options) { o.Create = []string{p} })
		_, err := f.d.Create(ctx, small, ownTags("me"))
		if !cloud.IsPermanent(err) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), "executable") {
			t.Fatalf("a create command without its x bit: %v, want a permanent error naming %s and saying what to do", err, p)
		}
	})
	t.Run("missing program in sh -c", func(t *testing.T) {
		f := newFake(t, func(o *Options) { o.Create = []string{"/bin/sh", "-c", "no-such-cloud-cli create"} })
		if _, err := f.d.Create(ctx, small, ownTags("me")); !cloud.IsPermanent(err) {
			t.Fatalf("exit 127 from sh: %v, want permanent", err)
		}
	})
	t.Run("hanging", func(t *testing.T) {
		f := newFake(t, func(o *Options) { o.Timeout = time.Second })
		f.fault(VerbCreate, "hang")
		start := time.Now()
		_, err := f.d.Create(ctx, small, ownTags("me"))
		if err == nil || !strings.Contains(err.Error(), "did not finish within 1s and was killed") || !strings.Contains(err.Error(), fakecloudPath(t)) {
			t.Fatalf("a hanging create: %v", err)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("a hanging create returned after %s", took)
		}
		// The sleep it started is killed with it.
		var pids []byte
		seen := func() string { return "pids " + string(pids) }
		wait.With{Seen: seen}.Until(t, "the hanging command's child killed", 30*time.Second, func() bool {
			pids, _ = exec.Command("pgrep", "-f", "sleep 600").Output()
			return len(strings.TrimSpace(string(pids))) == 0
		})
	})
	t.Run("garbage", func(t *testing.T) {
		f := newFake(t, nil)
		f.fault(VerbCreate, "garbage")
		_, err := f.d.Create(ctx, small, ownTags("me"))
		if err == nil || !strings.Contains(err.Error(), "printed no JSON object") || !strings.Contains(err.Error(), "502 Bad Gateway") {
			t.Fatalf("create printing HTML: %v", err)
		}
		f.fault(VerbList, "garbage")
		if _, err := f.d.Instances(ctx, nil); err == nil || !strings.Contains(err.Error(), "list command") || !strings.Contains(err.Error(), "line 1") {
			t.Fatalf("list printing HTML: %v", err)
		}
	})
	t.Run("no id", func(t *testing.T) {
		f := newFake(t, nil)
		f.fault(VerbCreate, "noid")
		if _, err := f.d.Create(ctx, small, ownTags("me")); err == nil || !strings.Contains(err.Error(), "exited 0 but reported no id") {
			t.Fatalf("create without an id: %v", err)
		}
	})
	t.Run("created but not reported", func(t *testing.T) {
		f := newFake(t, nil)
		f.fault(VerbCreate, "unreported")
		if _, err := f.d.Create(ctx, small, ownTags("me")); err == nil || !strings.Contains(err.Error(), "lost the reply") {
			t.Fatalf("create failing after making the instance: %v", err)
		}
		if got := f.list(cloud.Tags{cloud.TagOwner: "me"}); len(got) != 1 || got[0].Tags()[cloud.TagSecret] != "0123abcd" {
			t.Fatalf("the instance made is not listed with its tags: %v", ids(got))
		}
	})
	t.Run("id never listed", func(t *testing.T) {
		f := newFake(t, func(o *Options) { o.ListGrace = time.Minute })
		f.fault(VerbCreate, "phantom")
		inst, err := f.d.Create(ctx, small, ownTags("me"))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.list(nil); len(got) != 1 || got[0].ID() != inst.ID() {
			t.Fatalf("within the grace, the listing shows %v, want %s", ids(got), inst.ID())
		}
		f.clk.Advance(time.Minute)
		_, err = f.d.Instances(ctx, nil)
		if err == nil || !strings.Contains(err.Error(), "i-phantom") || !strings.Contains(err.Error(), "has not printed within 1m0s") || !strings.Contains(err.Error(), "list command") {
			t.Fatalf("after the grace: %v, want an error naming i-phantom and the list command", err)
		}
		if !strings.Contains(f.calls(), "destroy") {
			t.Fatalf("the phantom instance was not destroyed; calls:\n%s", f.calls())
		}
		if got := f.list(nil); len(got) != 0 {
			t.Fatalf("listed after it was given up: %v", ids(got))
		}
	})
}

// TestNoSetTags: without a set_tags command, tag changes hold in the
// driver over what the listing reports.
func TestNoSetTags(t *testing.T) {
	f := newFake(t, func(o *Options) { o.SetTags = nil })
	ctx := context.Background()
	inst, err := f.d.Create(ctx, small, ownTags("me"))
	if err != nil {
		t.Fatal(err)
	}
	held := ownTags("me")
	held[cloud.TagIdleBehavior] = "hold"
	if err := inst.SetTags(ctx, held); err != nil {
		t.Fatal(err)
	}
	if got := f.list(nil); len(got) != 1 || got[0].Tags()[cloud.TagIdleBehavior] != "hold" {
		t.Fatalf("tags after a listing: %v", got)
	}
	if strings.Contains(f.calls(), "set_tags") {
		t.Fatal("set_tags ran although it is not configured")
	}
}

func TestPreemptedAndTerminatedStates(t *testing.T) {
	requireTools(t)
	f := newFake(t, func(o *Options) {
		o.List = []string{"/bin/sh", "-c", `printf '%s\n' '{"id":"a","address":"h1","tags":{"dispatch-tui-owner":"me"},"state":"preempted"}' '{"id":"b","tags":{"dispatch-tui-owner":"me"},"state":"terminated"}' '{"id":"c","tags":{"other":"x"}}' '{"id":"a","address":"h1","tags":{"dispatch-tui-owner":"me"},"state":"preempted"}'`}
	})
	got := f.list(nil)
	if len(got) != 1 || got[0].ID() != "a" || got[0].Address() != "h1:2222" {
		t.Fatalf("listing: %v, want only a at h1:2222, once (b terminated, c not the dispatcher's, a printed twice)", ids(got))
	}
	if why, ok := cloud.Interrupted(got[0]); !ok || !strings.Contains(why, "preempted") {
		t.Fatalf("a preempted instance is not interrupted: %q %v", why, ok)
	}
}

func TestNewChecks(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	ok := Options{Create: []string{"c"}, List: []string{"l"}, Destroy: []string{"d"}, Timeout: time.Minute, Signer: signer}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Options){
		"create":  func(o *Options) { o.Create = nil },
		"list":    func(o *Options) { o.List = []string{""} },
		"destroy": func(o *Options) { o.Destroy = nil },
		"timeout": func(o *Options) { o.Timeout = 0 },
		"key":     func(o *Options) { o.Signer = nil },
		"user":    func(o *Options) { o.AdminUser = "Root!" },
	} {
		o := ok
		change(&o)
		if _, err := New(o); err == nil {
			t.Errorf("New accepted options without a valid %s", name)
		}
	}
}
