package sshhosts

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
)

var unitTypes = []cloud.InstanceType{
	{Name: "small", ProviderType: "prov-small", VCPUs: 1, RAM: 1 << 30, Price: 1},
	{Name: "big", ProviderType: "prov-big", VCPUs: 4, RAM: 8 << 30, Price: 3},
}

func writeClientKey(t *testing.T, dir string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "key")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewRejectsBadOptionsNamingTheHost(t *testing.T) {
	t.Parallel() // New with the good options waits out a dial to an address nobody answers
	dir := t.TempDir()
	key := writeClientKey(t, dir)
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("not a key"), 0o600)
	encBlock, _ := func() (*pem.Block, error) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		return ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("pw"))
	}()
	enc := filepath.Join(dir, "enc")
	os.WriteFile(enc, pem.EncodeToMemory(encBlock), 0o600)
	// Keys others may read, or another user (nobody) owns and may swap.
	open := writeClientKey(t, t.TempDir())
	os.Chmod(open, 0o644)
	nobodys := writeClientKey(t, t.TempDir())
	chownErr := os.Chown(nobodys, 65534, -1)
	if chownErr != nil && (os.Geteuid() == 0 || os.Getenv("CI") == "true") {
		t.Fatal(chownErr)
	}

	good := Host{Address: "10.0.0.5:22", InstanceType: "small"}
	base := func() Options {
		return Options{Hosts: []Host{good}, Types: unitTypes, DefaultUser: "u", DefaultKeyFile: key, KnownHosts: kh}
	}
	if d, err := New(base()); err != nil {
		t.Fatalf("good options: %v", err)
	} else {
		d.Stop()
	}
	cases := []struct {
		name string
		mod  func(*Options)
		want []string
	}{
		{"no known_hosts", func(o *Options) { o.KnownHosts = "" }, []string{"known_hosts"}},
		{"missing known_hosts", func(o *Options) { o.KnownHosts = filepath.Join(dir, "nope") }, []string{"known_hosts", "nope"}},
		{"no hosts", func(o *Options) { o.Hosts = nil }, []string{"no hosts"}},
		{"bad address", func(o *Options) { o.Hosts = []Host{{Address: "10.0.0.5", InstanceType: "small"}} }, []string{"10.0.0.5", "host:port"}},
		{"unknown type", func(o *Options) { o.Hosts[0].InstanceType = "huge" }, []string{"10.0.0.5:22", `"huge"`}},
		{"no key", func(o *Options) { o.DefaultKeyFile = "" }, []string{"10.0.0.5:22", "key_file"}},
		{"missing key file", func(o *Options) { o.Hosts[0].KeyFile = filepath.Join(dir, "missing") }, []string{"10.0.0.5:22", "missing"}},
		{"garbage key file", func(o *Options) { o.Hosts[0].KeyFile = garbage }, []string{"10.0.0.5:22", garbage}},
		{"passphrase key", func(o *Options) { o.Hosts[0].KeyFile = enc }, []string{"10.0.0.5:22", enc, "passphrase"}},
		{"key readable by others", func(o *Options) { o.DefaultKeyFile = open }, []string{"10.0.0.5:22", open, "chmod 600"}},
		{"another user's key", func(o *Options) { o.Hosts[0].KeyFile = nobodys }, []string{"10.0.0.5:22", nobodys, "belongs to uid 65534", "chown"}},
		{"quote in work_dir", func(o *Options) { o.Hosts[0].WorkDir = "/srv/it's" }, []string{"10.0.0.5:22", "work_dir", "single quote"}},
		{"~user work_dir", func(o *Options) { o.Hosts[0].WorkDir = "~bob/x" }, []string{"10.0.0.5:22", "work_dir"}},
		{"same id", func(o *Options) {
			o.Hosts = []Host{good, {Address: "10-0.0.5:22", InstanceType: "small"}}
		}, []string{"10-0.0.5:22", "host-10-0-0-5-22"}},
		{"quote in runner path", func(o *Options) { o.RunnerPath = "/tmp/it's" }, []string{"runner path"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "another user's key" && chownErr != nil {
				t.Skipf("needs root to give a file to another user: %v", chownErr)
			}
			o := base()
			o.Hosts = append([]Host(nil), o.Hosts...)
			c.mod(&o)
			d, err := New(o)
			if err == nil {
				d.Stop()
				t.Fatal("New accepted the options")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestInstanceIDAndWorkDir(t *testing.T) {
	for addr, want := range map[string]cloud.InstanceID{
		"10.0.0.5:22":          "host-10-0-0-5-22",
		"[::1]:2222":           "host----1--2222",
		"build-1.example:2200": "host-build-1-example-2200",
	} {
		if got := InstanceID(addr); got != want {
			t.Errorf("InstanceID(%q) = %q, want %q", addr, got, want)
		}
	}
	for in, want := range map[string]string{
		"": "", "~": "", "~/": "", ".": "", "~/work": "work", "/srv/dt/": "/srv/dt", "a/../b": "b",
	} {
		got, err := cleanWorkDir(in)
		if err != nil || got != want {
			t.Errorf("cleanWorkDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestShellLinesQuoteConfigPathsAndCarryNoData(t *testing.T) {
	d := &Driver{}
	h := &Instance{d: d, workDir: "/srv/my dir"}
	if got, want := h.runnerPrefix(), "cd '/srv/my dir' && export DISPATCH_TUI_RUNNER_DIR='/srv/my dir/runner' && { "; got != want {
		t.Errorf("runnerPrefix = %q, want %q", got, want)
	}
	rel := &Instance{d: d, workDir: "work"}
	if got, want := rel.runnerPrefix(), "cd 'work' && export DISPATCH_TUI_RUNNER_DIR='runner' && { "; got != want {
		t.Errorf("relative runnerPrefix = %q, want %q", got, want)
	}
	if got := (&Instance{d: d}).runnerPrefix(); got != "" {
		t.Errorf("no work_dir: runnerPrefix = %q, want none", got)
	}
	for _, line := range []string{h.claimLine(), h.setTagsLine(true), h.setTagsLine(false), h.releaseLine(), h.readTagsLine()} {
		if !strings.Contains(line, "'/srv/my dir/.dispatch-tui-") {
			t.Errorf("line does not use the quoted work_dir: %s", line)
		}
	}
}
