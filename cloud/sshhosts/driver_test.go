//go:build linux

package sshhosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
)

// driverEnv is n real sshd servers and a driver over them; host i has type
// types[i] and its own work_dir.
type driverEnv struct {
	*sshdEnv
	opts     Options
	workDirs []string
}

func newDriverEnv(t *testing.T, types ...string) *driverEnv {
	t.Helper()
	env := newSSHDEnv(t, len(types))
	de := &driverEnv{sshdEnv: env}
	var hosts []Host
	for i, s := range env.servers {
		wd := filepath.Join(env.dir, "work", s.dir[len(env.dir)+1:])
		de.workDirs = append(de.workDirs, wd)
		hosts = append(hosts, Host{Address: s.addr, InstanceType: types[i], WorkDir: wd})
	}
	de.opts = Options{
		Hosts: hosts, Types: unitTypes,
		DefaultUser: env.user, DefaultKeyFile: env.clientKey, KnownHosts: env.knownHosts,
		RunnerPath: "./dispatch-tui-runner",
		Logger:     testLogger(t),
	}
	return de
}

func (de *driverEnv) driver() *Driver {
	de.t.Helper()
	d, err := New(de.opts)
	if err != nil {
		de.t.Fatal(err)
	}
	de.t.Cleanup(d.Stop)
	return d
}

func testTags(owner, secret string) cloud.Tags {
	return cloud.Tags{cloud.TagOwner: owner, cloud.TagInstanceType: "small", cloud.TagIdleBehavior: "run", cloud.TagSecret: secret}
}

func ids(insts []cloud.Instance) []string {
	var out []string
	for _, i := range insts {
		out = append(out, string(i.ID()))
	}
	return out
}

func list(t *testing.T, d *Driver, filter cloud.Tags) []cloud.Instance {
	t.Helper()
	insts, err := d.Instances(context.Background(), filter)
	if err != nil {
		t.Fatal(err)
	}
	return insts
}

func readFileOnHost(t *testing.T, dir, name string) (string, os.FileMode, bool) {
	t.Helper()
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), fi.Mode().Perm(), true
}

func TestClaimReleaseAndCapacity(t *testing.T) {
	de := newDriverEnv(t, "small", "small", "big")
	d := de.driver()
	ctx := context.Background()
	small, big := unitTypes[0], unitTypes[1]
	owner := cloud.Tags{cloud.TagOwner: "me"}

	if got := list(t, d, owner); len(got) != 0 {
		t.Fatalf("fresh hosts listed: %v", ids(got))
	}
	a, err := d.Create(ctx, small, testTags("me", "s-a"))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() != InstanceID(de.servers[0].addr) || a.Address() != de.servers[0].addr || a.ProviderType() != "prov-small" {
		t.Fatalf("first small instance = %s %s %s, want host 0 (%s) of provider type prov-small", a.ID(), a.Address(), a.ProviderType(), de.servers[0].addr)
	}
	// The claim is on the host: tags file and a 0600 secret file in work_dir.
	body, _, ok := readFileOnHost(t, de.workDirs[0], TagsFile)
	var onHost cloud.Tags
	if !ok || json.Unmarshal([]byte(body), &onHost) != nil || !reflect.DeepEqual(onHost, testTags("me", "s-a")) {
		t.Fatalf("tags file on host 0 = %q (exists %v)", body, ok)
	}
	if s, mode, ok := readFileOnHost(t, de.workDirs[0], SecretFile); !ok || strings.TrimSpace(s) != "s-a" || mode != 0o600 {
		t.Fatalf("secret file on host 0 = %q mode %v exists %v; want s-a, 0600", s, mode, ok)
	}

	b, err := d.Create(ctx, small, testTags("me", "s-b"))
	if err != nil || b.ID() != InstanceID(de.servers[1].addr) {
		t.Fatalf("second small create = %v, %v; want host 1", b, err)
	}
	_, err = d.Create(ctx, small, testTags("me", "s-c"))
	ce, ok := cloud.AsCapacity(err)
	if !ok || ce.InstanceType != "prov-small" {
		t.Fatalf("third small create: err %v, want a capacity error for prov-small", err)
	}
	c, err := d.Create(ctx, big, testTags("me", "s-c"))
	if err != nil || c.ID() != InstanceID(de.servers[2].addr) {
		t.Fatalf("big create = %v, %v; want host 2", c, err)
	}
	if got := ids(list(t, d, owner)); len(got) != 3 {
		t.Fatalf("listed %v, want all three hosts", got)
	}
	if got := list(t, d, cloud.Tags{cloud.TagOwner: "someone-else"}); len(got) != 0 {
		t.Fatalf("filter on another owner listed %v", ids(got))
	}

	// Release host 0: files gone, not listed; claimable again only once a
	// listing has seen it free.
	if err := a.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{TagsFile, SecretFile} {
		if _, _, ok := readFileOnHost(t, de.workDirs[0], f); ok {
			t.Errorf("%s still on host 0 after Destroy", f)
		}
	}
	if err := a.Destroy(ctx); err != nil {
		t.Errorf("destroying a released host: %v, want nil", err)
	}
	if err := a.SetTags(ctx, testTags("me", "s-a")); !errors.Is(err, ErrNotClaimed) {
		t.Errorf("SetTags on a released host: %v, want ErrNotClaimed", err)
	}
	if _, err := d.Create(ctx, small, testTags("me", "s-d")); err == nil {
		t.Fatal("a just-released host was claimed again before any listing saw it free")
	}
	if got := ids(list(t, d, owner)); len(got) != 2 || slicesContains(got, string(a.ID())) {
		t.Fatalf("after destroy listed %v, want hosts 1 and 2", got)
	}
	a2, err := d.Create(ctx, small, testTags("me", "s-d"))
	if err != nil || a2.ID() != a.ID() {
		t.Fatalf("create after release = %v, %v; want host 0 again", a2, err)
	}

	// Another dispatcher sharing the hosts sees them all taken.
	d2 := de.driver()
	list(t, d2, nil)
	if _, err := d2.Create(ctx, small, testTags("other", "x")); err == nil {
		t.Fatal("second driver claimed a host the first one holds")
	} else if _, ok := cloud.AsCapacity(err); !ok {
		t.Fatalf("second driver: %v, want a capacity error", err)
	}
	// Even without a listing, the claim on the host itself refuses.
	d3 := de.driver()
	if _, err := d3.Create(ctx, small, testTags("other", "x")); err == nil {
		t.Fatal("third driver (no listing) claimed a host that has a tags file")
	}
	if s, _, _ := readFileOnHost(t, de.workDirs[0], SecretFile); strings.TrimSpace(s) != "s-d" {
		t.Fatalf("a refused claim changed the secret on host 0 to %q", s)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestTagsRoundTripAndExecutor(t *testing.T) {
	de := newDriverEnv(t, "small")
	d := de.driver()
	ctx := context.Background()
	inst, err := d.Create(ctx, unitTypes[0], testTags("me", "secret-1"))
	if err != nil {
		t.Fatal(err)
	}
	held := testTags("me", "secret-1")
	held[cloud.TagIdleBehavior] = "hold"
	held["extra"] = `quotes ' " $(echo no) and
newline`
	if err := inst.SetTags(ctx, held); err != nil {
		t.Fatal(err)
	}
	if got := inst.Tags(); !reflect.DeepEqual(got, held) {
		t.Fatalf("Tags() = %v, want %v", got, held)
	}
	// A new driver (a restarted dispatcher) reads them back from the host.
	d2 := de.driver()
	insts := list(t, d2, cloud.Tags{cloud.TagOwner: "me"})
	if len(insts) != 1 || !reflect.DeepEqual(insts[0].Tags(), held) {
		t.Fatalf("new driver lists %v with tags %v, want the held tags", ids(insts), insts)
	}

	// The executor: secret checked, commands run in work_dir with the
	// runner's state dir under it.
	ex, err := d2.Executor(insts[0])
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	out, _, err := ex.Execute(ctx, `cd /; cd - >/dev/null; pwd; echo "$DISPATCH_TUI_RUNNER_DIR" # comment`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := de.workDirs[0] + "\n" + de.workDirs[0] + "/runner\n"; string(out) != want {
		t.Fatalf("executor ran in %q, want %q", out, want)
	}

	// Changing the secret rewrites the secret file: the old secret no
	// longer gets in, the new one does.
	rotated := held.Clone()
	rotated[cloud.TagSecret] = "secret-2"
	if err := insts[0].SetTags(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	if s, mode, _ := readFileOnHost(t, de.workDirs[0], SecretFile); strings.TrimSpace(s) != "secret-2" || mode != 0o600 {
		t.Fatalf("secret file = %q mode %v after rotation", s, mode)
	}
	stale := &fakeInstance{Instance: inst.(*Instance), tags: held}
	ex2, _ := d.Executor(stale)
	defer ex2.Close()
	if _, _, err := ex2.Execute(ctx, "true", nil); !errors.Is(err, sshexec.ErrSecretMismatch) {
		t.Fatalf("executor with the old secret: %v, want ErrSecretMismatch", err)
	}
	ex3, _ := d.Executor(insts[0])
	defer ex3.Close()
	if _, _, err := ex3.Execute(ctx, "true", nil); err != nil {
		t.Fatalf("executor with the new secret: %v", err)
	}

	// A host key not in known_hosts is refused.
	de.writeKnownHosts() // empty
	d3 := de.driver()
	ex4, _ := d3.Executor(insts[0])
	defer ex4.Close()
	_, _, err = ex4.Execute(ctx, "true", nil)
	if !errors.Is(err, sshexec.ErrHostKey) || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("unknown host key: %v, want ErrHostKey saying the host is unknown", err)
	}
	if got := list(t, d3, nil); len(got) != 0 {
		t.Fatalf("a host with an unknown key was listed: %v", ids(got))
	}
	if _, err := d3.Create(ctx, unitTypes[0], testTags("me", "x")); err == nil {
		t.Fatal("created on a host with an unknown key")
	}
}

// fakeInstance is inst with other tags (for an executor with a stale secret).
type fakeInstance struct {
	*Instance
	tags cloud.Tags
}

func (f *fakeInstance) Tags() cloud.Tags { return f.tags }

func TestUnreachableHostKeepsBeingListed(t *testing.T) {
	de := newDriverEnv(t, "small", "small")
	d := de.driver()
	ctx := context.Background()
	inst, err := d.Create(ctx, unitTypes[0], testTags("me", "s"))
	if err != nil {
		t.Fatal(err)
	}
	owner := cloud.Tags{cloud.TagOwner: "me"}
	if got := ids(list(t, d, owner)); len(got) != 1 {
		t.Fatalf("listed %v", got)
	}
	fresh := de.driver() // has not listed anything yet
	de.servers[0].stop()

	t0 := time.Now()
	got := list(t, d, owner)
	if len(got) != 1 || got[0].ID() != inst.ID() || !reflect.DeepEqual(got[0].Tags(), testTags("me", "s")) {
		t.Fatalf("with host 0 down, listed %v; want it with its last tags", ids(got))
	}
	// Bounded by the driver's own per-host timeout, not TCP's minutes
	// (the margin is for a loaded machine).
	if el := time.Since(t0); el > 30*time.Second {
		t.Errorf("listing with a host down took %s", el)
	}
	// A driver that never reached the host does not list it.
	if got := list(t, fresh, owner); len(got) != 0 {
		t.Fatalf("a never-reached host was listed: %v", ids(got))
	}
	// Create skips the unreachable host.
	other, err := d.Create(ctx, unitTypes[0], testTags("me", "s2"))
	if err != nil || other.ID() != InstanceID(de.servers[1].addr) {
		t.Fatalf("create with host 0 down = %v, %v; want host 1", other, err)
	}
	// Destroy cannot release an unreachable host: an error, and it stays.
	if err := inst.Destroy(ctx); err == nil {
		t.Fatal("destroying an unreachable host succeeded")
	}
	if got := list(t, d, owner); len(got) != 2 {
		t.Fatalf("after a failed destroy listed %v", ids(got))
	}
	// A create that finds no host says why the unreachable one was skipped.
	_, err = fresh.Create(ctx, unitTypes[0], testTags("me", "s3"))
	if _, ok := cloud.AsCapacity(err); !ok || !strings.Contains(err.Error(), "1 unreachable") ||
		!strings.Contains(err.Error(), "; "+de.servers[0].addr+": ") {
		t.Fatalf("create with host 0 down and host 1 taken: %v; want a capacity error naming host 0's error", err)
	}
	// Back up: listed from the host itself again, and destroyable.
	de.servers[0].start()
	if got := ids(list(t, fresh, owner)); len(got) != 2 || !slicesContains(got, string(inst.ID())) {
		t.Fatalf("host 0 back up: fresh driver lists %v", got)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDestroyKillsLeftoverContainers(t *testing.T) {
	t.Parallel()
	de := newDriverEnv(t, "small")
	_, bin, hash := dispatchBinary(t)
	de.opts.RunnerPath = "./dispatch-tui-runner~" + hash
	d := de.driver()
	ctx := context.Background()
	inst, err := d.Create(ctx, unitTypes[0], testTags("me", "s"))
	if err != nil {
		t.Fatal(err)
	}
	// Destroying before any runner is deployed only releases.
	if err := inst.Destroy(ctx); err != nil {
		t.Fatalf("destroy without a runner: %v", err)
	}
	list(t, d, nil)
	if inst, err = d.Create(ctx, unitTypes[0], testTags("me", "s")); err != nil {
		t.Fatal(err)
	}
	ex, err := d.Executor(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if _, _, err := ex.Execute(ctx, runner.InstallLine(de.opts.RunnerPath, int64(len(bin))), bin); err != nil {
		t.Fatal(err)
	}
	client := runner.Client{Exec: ex, Path: de.opts.RunnerPath}
	for _, id := range []string{"long-1", "long-2", "short"} {
		cmd := []string{"sleep", "300"}
		if id == "short" {
			cmd = []string{"true"}
		}
		if err := client.Start(ctx, runner.Spec{ID: id, Command: cmd}); err != nil {
			t.Fatal(err)
		}
	}
	if left := processesMentioning(de.workDirs[0]); len(left) < 2 {
		t.Fatalf("expected the supervisors of the sleeping containers to run, found %v", left)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(de.workDirs[0], RunnerDir))
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("runner state left after destroy: %v", names)
	}
	var left []string
	seen := func() string { return fmt.Sprintf("processes %v", left) }
	wait.With{Seen: seen}.Until(t, "no container process left after destroy", 5*time.Second, func() bool {
		left = processesMentioning(de.workDirs[0])
		return len(left) == 0
	})
}
