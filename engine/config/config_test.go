package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
)

// doc trims the leading newline of a raw string literal so that the line
// after the opening backquote is line 1.
func doc(s string) []byte { return []byte(strings.TrimPrefix(s, "\n")) }

func TestDefault(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	c := Default()
	want := &Config{
		Dispatcher: Dispatcher{
			TLS:                      "auto",
			MaxConnections:           256,
			StateDir:                 "/var/state/dispatch-tui",
			MaxInstances:             64,
			MaxContainersPerInstance: 1,
			MaxPriceFactor:           1.5,
			SchedulerProfile:         "pack",
			StaleLockTimeout:         time.Minute,
			ReserveExtraRAM:          256 << 20,
			MemoryLimit:              160 << 20,
			EventRetention:           200000,
			SupervisorFraction:       0.3,
		},
		Cloud: Cloud{
			Driver:               "local",
			SSHPort:              22,
			RunnerPath:           "/tmp/dispatch-tui-runner",
			BootProbeCommand:     "true",
			TimeoutIdle:          time.Minute,
			TimeoutBooting:       10 * time.Minute,
			TimeoutProbe:         10 * time.Minute,
			TimeoutRunnerCall:    10 * time.Second,
			TimeoutShutdown:      10 * time.Second,
			ProbeInterval:        10 * time.Second,
			SyncInterval:         time.Minute,
			MaxProbesPerSecond:   10,
			MaxCloudOpsPerSecond: 10,
			MaxConcurrentCreates: 1,
			Script:               ScriptDriver{Env: []string{"PATH", "HOME"}, Timeout: 5 * time.Minute, AdminUser: "dispatch-tui"},
			Local:                LocalDriver{BootDelay: 2 * time.Second},
			EC2:                  EC2Driver{AdminUser: "dispatch-tui", RootVolumeType: "gp3", ScratchVolumeType: "gp3", IMDSv2Required: true, MetadataHopLimit: 1, SpotPriceInterval: 5 * time.Minute},
		},
		InstanceTypes: []cloud.InstanceType{
			{Name: "small", ProviderType: "small", VCPUs: 1, RAM: 1 << 30, Scratch: 10 << 30, Price: 0.02},
			{Name: "medium", ProviderType: "medium", VCPUs: 2, RAM: 4 << 30, Scratch: 20 << 30, Price: 0.08},
			{Name: "large", ProviderType: "large", VCPUs: 4, RAM: 16 << 30, Scratch: 40 << 30, Price: 0.30},
		},
		Containers: Containers{MaxAttempts: 3, KillGrace: 30 * time.Second, KeepFinished: 10000, MaxOutput: 4 << 20},
		TUI:        TUI{Refresh: time.Second, Theme: "auto", Keys: map[string]string{}},
		HA:         HA{NodeName: hostname(), Lease: 5 * time.Second, LeaseRetry: time.Second},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Default() =\n%+v\nwant\n%+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv("HOME", "/home/op")
	for _, tc := range []struct{ xdg, want string }{
		{"/x/state", "/x/state/dispatch-tui"},
		{"", "/home/op/.local/state/dispatch-tui"},
		{"relative/ignored", "/home/op/.local/state/dispatch-tui"},
	} {
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		if got := DefaultStateDir(); got != tc.want {
			t.Errorf("XDG_STATE_HOME=%q: DefaultStateDir() = %q, want %q", tc.xdg, got, tc.want)
		}
		c, err := Parse(doc(`
[dispatcher]
state_dir = ""
`), "c.toml")
		if err != nil {
			t.Fatal(err)
		}
		if c.Dispatcher.StateDir != tc.want {
			t.Errorf("XDG_STATE_HOME=%q: parsed state_dir \"\" = %q, want %q", tc.xdg, c.Dispatcher.StateDir, tc.want)
		}
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "\n\n[dispatcher]\n[cloud]\n"} {
		c, err := Parse([]byte(src), "empty.toml")
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		want := Default()
		want.Path = "empty.toml"
		if !reflect.DeepEqual(c, want) {
			t.Errorf("Parse(%q) =\n%+v\nwant\n%+v", src, c, want)
		}
	}
}

func TestParseFull(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	src := doc(`
# A config that changes every key.
[dispatcher]
listen = "0.0.0.0:7000"
token_file = "token"              # relative to the config file
state_dir = "/srv/dispatch"
max_instances = 10
max_containers_per_instance = 0
max_price_factor = 2
scheduler_profile = "spread"
stale_lock_timeout = "2m30s"
reserve_extra_ram = 134217728
memory_limit = "1GiB"
event_retention = 5000
supervisor_fraction = 0.5

[cloud]
driver = "sshhosts"
ssh_user = "ops"
ssh_key_file = "/keys/id"
ssh_port = 2222
known_hosts = "/keys/known_hosts"
runner_path = "/opt/runner"
boot_probe_command = "test -d /data"
timeout_idle = "0s"
timeout_booting = "5m"
timeout_probe = "3m"
timeout_runner_call = "4s"
timeout_shutdown = "20s"
probe_interval = "5s"
sync_interval = "30s"
max_probes_per_second = 2.5
max_cloud_ops_per_second = 4
max_concurrent_creates = 3
local.boot_delay = "0s"

[[cloud.sshhosts.host]]
address = "10.0.0.5"
instance_type = "gpu"
labels = {rack = "r1"}

[[cloud.sshhosts.host]]
address = "10.0.0.6:22"
instance_type = "cpu"
user = "root"
key_file = "/keys/root"
work_dir = "/scratch"

[[instance_type]]
name = "gpu"
provider_type = "g4dn.xlarge"
vcpus = 4
ram = "16GiB"
scratch = "125GB"
gpus = 1
price = 0.526
preemptible = true
labels = {gpu = "t4"}

[[instance_type]]
name = "cpu"
vcpus = 2
ram = "1.5GiB"
scratch = 0
price = 0.1

[[instance_type]]
name = "another"
vcpus = 2
ram = 1073741824
price = 0.1

[containers]
max_attempts = 5
kill_grace = "1m"
keep_finished = 0
max_output = "16MiB"

[tui]
refresh = "250ms"
theme = "dark"
read_only = true

[tui.keys]
hold = "H"
kill = "ctrl+k"
`)
	c, err := Parse(src, path)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Path: path,
		Dispatcher: Dispatcher{
			Listen:                   "0.0.0.0:7000",
			Token:                    "s3cret",
			TokenFile:                filepath.Join(dir, "token"),
			TLS:                      "auto",
			MaxConnections:           256,
			StateDir:                 "/srv/dispatch",
			MaxInstances:             10,
			MaxContainersPerInstance: 0,
			MaxPriceFactor:           2,
			SchedulerProfile:         "spread",
			StaleLockTimeout:         150 * time.Second,
			ReserveExtraRAM:          128 << 20,
			MemoryLimit:              1 << 30,
			EventRetention:           5000,
			SupervisorFraction:       0.5,
		},
		Cloud: Cloud{
			Driver:               "sshhosts",
			SSHUser:              "ops",
			SSHKeyFile:           "/keys/id",
			SSHPort:              2222,
			KnownHosts:           "/keys/known_hosts",
			RunnerPath:           "/opt/runner",
			BootProbeCommand:     "test -d /data",
			TimeoutIdle:          0,
			TimeoutBooting:       5 * time.Minute,
			TimeoutProbe:         3 * time.Minute,
			TimeoutRunnerCall:    4 * time.Second,
			TimeoutShutdown:      20 * time.Second,
			ProbeInterval:        5 * time.Second,
			SyncInterval:         30 * time.Second,
			MaxProbesPerSecond:   2.5,
			MaxCloudOpsPerSecond: 4,
			MaxConcurrentCreates: 3,
			Script:               ScriptDriver{Env: []string{"PATH", "HOME"}, Timeout: 5 * time.Minute, AdminUser: "dispatch-tui"},
			Local:                LocalDriver{BootDelay: 0},
			EC2:                  EC2Driver{AdminUser: "dispatch-tui", RootVolumeType: "gp3", ScratchVolumeType: "gp3", IMDSv2Required: true, MetadataHopLimit: 1, SpotPriceInterval: 5 * time.Minute},
			SSHHosts: SSHHostsDriver{Hosts: []SSHHost{
				{Address: "10.0.0.5:2222", InstanceType: "gpu", Labels: map[string]string{"rack": "r1"}},
				{Address: "10.0.0.6:22", InstanceType: "cpu", User: "root", KeyFile: "/keys/root", WorkDir: "/scratch"},
			}},
		},
		InstanceTypes: []cloud.InstanceType{ // by price, then name
			{Name: "another", ProviderType: "another", VCPUs: 2, RAM: 1 << 30, Price: 0.1},
			{Name: "cpu", ProviderType: "cpu", VCPUs: 2, RAM: 3 << 29, Price: 0.1},
			{Name: "gpu", ProviderType: "g4dn.xlarge", VCPUs: 4, RAM: 16 << 30, Scratch: 125e9, GPUs: 1, Price: 0.526, Preemptible: true,
				Labels: map[string]string{"gpu": "t4", "rack": "r1"}}, // the host's labels added
		},
		Containers: Containers{MaxAttempts: 5, KillGrace: time.Minute, KeepFinished: 0, MaxOutput: 16 << 20},
		TUI: TUI{Refresh: 250 * time.Millisecond, Theme: "dark", ReadOnly: true,
			Keys: map[string]string{"hold": "H", "kill": "ctrl+k"}},
		HA: HA{NodeName: hostname(), Advertise: "https://" + hostname() + ":7000", Lease: 5 * time.Second, LeaseRetry: time.Second},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", c, want)
	}
}

func TestInlineAndDottedForms(t *testing.T) {
	c, err := Parse(doc(`
dispatcher.max_instances = 7
cloud = { driver = "local", local = { boot_delay = "1s" } }
instance_type = [
  { name = "a", vcpus = 1, ram = "1GiB", price = 1.0 },
  { name = "b", vcpus = 1, ram = "1GiB", price = 0.5 },
]
tui.keys.hold = "x"
`), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Dispatcher.MaxInstances != 7 || c.Cloud.Local.BootDelay != time.Second ||
		len(c.InstanceTypes) != 2 || c.InstanceTypes[0].Name != "b" || c.TUI.Keys["hold"] != "x" {
		t.Errorf("got %+v", c)
	}
}

// TestErrors checks each kind of error, with its line.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	emptyToken := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyToken, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		src  string
		want []string // each error, in order: "config.toml:LINE: text" prefixes
	}{
		{"syntax", `
[dispatcher]
listen = "x
`, []string{"config.toml:2: invalid TOML: "}},
		{"duplicate key", `
[dispatcher]
max_instances = 1
max_instances = 2
`, []string{"config.toml:3: invalid TOML: "}},
		{"unknown key", `
[dispatcher]
state_dir = "/x"

max_instance = 3
`, []string{"config.toml:4: unknown key dispatcher.max_instance (did you mean dispatcher.max_instances?)"}},
		{"runner_path a bare name", `
[cloud]
runner_path = "dispatch-tui-runner"
`, []string{"config.toml:2: cloud.runner_path: must be an absolute path, or relative to the work_dir with a slash (\"./dispatch-tui-runner\")"}},
		{"runner_path with a quote", `
[cloud]
runner_path = "/tmp/it's"
`, []string{"config.toml:2: cloud.runner_path: must not contain a single quote"}},
		{"bad cluster_id", `
[dispatcher]
cluster_id = "Team A"
`, []string{"config.toml:2: dispatcher.cluster_id: \"Team A\": only lowercase letters"}},
		{"unknown key, wrong case", `
[dispatcher]
Max_Instances = 3
`, []string{"config.toml:2: unknown key dispatcher.Max_Instances (did you mean dispatcher.max_instances?)"}},
		{"unknown table and its keys reported once", `
[dispatch]
listen = "x"
max = 1
`, []string{"config.toml:1: unknown key dispatch (did you mean dispatcher?)"}},
		{"unknown key in the Nth instance type", `
[[instance_type]]
name = "a"
vcpus = 1
ram = "1GiB"

[[instance_type]]
name = "b"
vcpus = 1
ram = "1GiB"
cpus = 2
`, []string{"config.toml:10: unknown key instance_type.cpus (did you mean instance_type.vcpus?)"}},
		{"same unknown key in two array elements", `
[[instance_type]]
name = "a"
vcpus = 1
ram = "1GiB"
color = "red"

[[instance_type]]
name = "b"
vcpus = 1
ram = "1GiB"
color = "blue"
`, []string{
			"config.toml:5: unknown key instance_type.color",
			"config.toml:11: unknown key instance_type.color",
		}},
		{"unknown key in a host", `
[cloud]
driver = "sshhosts"
[[cloud.sshhosts.host]]
address = "h1"
instance_type = "small"
[[cloud.sshhosts.host]]
address = "h2"
instance_type = "small"
port = 22
`, []string{"config.toml:9: unknown key cloud.sshhosts.host.port"}},
		{"unknown dotted and inline keys", `
dispatcher.lisen = "x"
cloud = { local = { boot_dely = "1s" } }
`, []string{
			"config.toml:1: unknown key dispatcher.lisen (did you mean dispatcher.listen?)",
			"config.toml:2: unknown key cloud.local.boot_dely (did you mean cloud.local.boot_delay?)",
		}},
		{"unknown key after multi-line values", `
[cloud]
boot_probe_command = """
[tui]
driver = "x"
"""
[dispatcher]
extra = [
  1,
  2, # [cloud]
]
bogus = 1
`, []string{
			"config.toml:7: unknown key dispatcher.extra",
			"config.toml:11: unknown key dispatcher.bogus",
		}},
		{"int out of range", `
[dispatcher]
max_instances = 0
`, []string{"config.toml:2: dispatcher.max_instances: must be >= 1 (got 0)"}},
		{"wrong type", `
[dispatcher]
max_instances = "many"
max_price_factor = "high"
listen = 9006
[tui]
read_only = "yes"
`, []string{
			"config.toml:2: dispatcher.max_instances: must be an integer (got string)",
			"config.toml:3: dispatcher.max_price_factor: must be a number (got string)",
			"config.toml:4: dispatcher.listen: must be a string (got integer)",
			"config.toml:6: tui.read_only: must be true or false (got string)",
		}},
		{"bad size", `
[dispatcher]
reserve_extra_ram = "256 MegaBytes"
[[instance_type]]
name = "a"
vcpus = 1
ram = -5
`, []string{
			`config.toml:2: dispatcher.reserve_extra_ram: invalid size "256 MegaBytes": unknown unit`,
			"config.toml:6: instance_type[0].ram: must not be negative (got -5)",
		}},
		{"memory limit too small", `
[dispatcher]
memory_limit = "1MiB"
`, []string{
			"config.toml:2: dispatcher.memory_limit: must be 0 (no limit) or at least 32MiB (got 1048576 bytes)",
		}},
		{"max output out of range", `
[containers]
max_output = "512B"
`, []string{
			"config.toml:2: containers.max_output: must be between 1KiB and 32MiB (got 512B)",
		}},
		{"max output too large", `
[containers]
max_output = "1GiB"
`, []string{
			"config.toml:2: containers.max_output: must be between 1KiB and 32MiB (got 1GiB)",
		}},
		{"bad duration", `
[cloud]
timeout_idle = "5 minutes"
timeout_booting = "-1m"
probe_interval = 10
sync_interval = "0s"
`, []string{
			`config.toml:2: cloud.timeout_idle: invalid duration "5 minutes"`,
			`config.toml:3: cloud.timeout_booting: invalid duration "-1m": must not be negative`,
			`config.toml:4: cloud.probe_interval: must be a duration string like "90s" or "10m" (got integer)`,
			"config.toml:5: cloud.sync_interval: must be > 0 (got 0s)",
		}},
		{"timeout_unreachable below timeout_probe", `
[cloud]
timeout_probe = "5m"
timeout_unreachable = "1m"
`, []string{
			"config.toml:3: cloud.timeout_unreachable: must be 0 (off) or at least timeout_probe (5m0s): an instance is given up for failing probes first (got 1m0s)",
		}},
		{"enumerations", `
[dispatcher]
scheduler_profile = "random"
[cloud]
driver = "gce"
[tui]
theme = "blue"
`, []string{
			`config.toml:2: dispatcher.scheduler_profile: must be "pack" or "spread" (got "random")`,
			`config.toml:4: cloud.driver: must be "local", "sshhosts", "ec2", "script" or "fake" (got "gce")`,
			`config.toml:6: tui.theme: must be "auto", "dark" or "light" (got "blue")`,
		}},
		{"numbers", `
[dispatcher]
max_price_factor = 0.9
max_containers_per_instance = -1
[cloud]
ssh_port = 70000
max_probes_per_second = 0
max_concurrent_creates = 0
[containers]
max_attempts = 0
`, []string{
			"config.toml:2: dispatcher.max_price_factor: must be >= 1 (got 0.9)",
			"config.toml:3: dispatcher.max_containers_per_instance: must be >= 0 (got -1)",
			"config.toml:5: cloud.ssh_port: must be between 1 and 65535 (got 70000)",
			"config.toml:6: cloud.max_probes_per_second: must be > 0 (got 0)",
			"config.toml:7: cloud.max_concurrent_creates: must be >= 1 (got 0)",
			"config.toml:9: containers.max_attempts: must be >= 1 (got 0)",
		}},
		{"instance types", `
[[instance_type]]
name = "a"
vcpus = 0
ram = "1GiB"
price = -1

[[instance_type]]
name = "a"
vcpus = 1
ram = 0

[[instance_type]]
vcpus = 1
ram = "1GiB"
`, []string{
			"config.toml:3: instance_type[0].vcpus: must be >= 1 (got 0)",
			"config.toml:5: instance_type[0].price: must be >= 0 (got -1)",
			`config.toml:8: instance_type[1].name: duplicate instance type name "a" (also instance_type[0])`,
			"config.toml:10: instance_type[1].ram: must be > 0 (got 0)",
			"config.toml:12: instance_type[2].name: must not be empty",
			"config.toml:12: instance_type[2].provider_type: must not be empty",
		}},
		{"no instance types", `
instance_type = []
`, []string{"config.toml:1: instance_type: at least one [[instance_type]] is required"}},
		{"hosts", `
[cloud]
driver = "sshhosts"

[[cloud.sshhosts.host]]
instance_type = "small"

[[cloud.sshhosts.host]]
address = "10.0.0.9"
instance_type = "huge"

[[cloud.sshhosts.host]]
address = "10.0.0.9:22"
instance_type = "medium"
`, []string{
			"config.toml:4: cloud.sshhosts.host[0].address: must not be empty",
			`config.toml:9: cloud.sshhosts.host[1].instance_type: unknown instance type "huge" (known: large, medium, small)`,
			`config.toml:12: cloud.sshhosts.host[2].address: duplicate address "10.0.0.9:22" (also cloud.sshhosts.host[1])`,
		}},
		{"sshhosts without hosts", `
[cloud]
driver = "sshhosts"
`, []string{`config.toml:2: cloud.sshhosts.host: driver "sshhosts" needs at least one [[cloud.sshhosts.host]]`}},
		{"token and token_file", `
[dispatcher]
token = "a"
token_file = "/etc/token"
`, []string{"config.toml:3: dispatcher.token_file: set token or token_file, not both"}},
		{"token_file unreadable", `
[dispatcher]
listen = "0.0.0.0:9006"
token_file = "/nonexistent/token"
`, []string{"config.toml:3: dispatcher.token_file: cannot read token: "}},
		{"token_file empty", `
[dispatcher]
token_file = "` + emptyToken + `"
`, []string{"config.toml:2: dispatcher.token_file: token file " + emptyToken + " is empty"}},
		{"token_file a directory", `
[dispatcher]
token_file = "` + dir + `"
`, []string{"config.toml:2: dispatcher.token_file: cannot read token: " + dir + " is not a regular file"}},
		{"no token off loopback", `
[dispatcher]
listen = ":9006"
`, []string{"config.toml:2: dispatcher.token: required when listen is set: TCP clients authenticate with a token"}},
		{"bad listen", `
[dispatcher]
listen = "localhost"
`, []string{`config.toml:2: dispatcher.listen: must be host:port (got "localhost")`}},
		{"control characters in paths", `
[dispatcher]
state_dir = "/var/lib/d\u0000t"
[cloud]
ssh_key_file = "/etc/k\u001b[31m"
known_hosts = "/etc/kh\n"
`, []string{
			`config.toml:2: dispatcher.state_dir: must not contain a control character such as NUL or a newline (got "/var/lib/d\x00t")`,
			`config.toml:4: cloud.ssh_key_file: must not contain a control character`,
			`config.toml:5: cloud.known_hosts: must not contain a control character`,
		}},
		{"section of the wrong shape", `
dispatcher = 5
[[cloud]]
driver = "local"
[instance_type]
name = "x"
[tui]
keys = "none"
colour = 1
`, []string{
			"config.toml:1: dispatcher: must be a table (got integer)",
			"config.toml:2: cloud: must be a table (got array)",
			"config.toml:4: instance_type: must be an array of tables, written [[instance_type]] (got table)",
			"config.toml:7: tui.keys: must be a table (got string)",
			"config.toml:8: unknown key tui.colour",
		}},
		{"leaf given a table", `
[dispatcher.listen]
host = "x"
`, []string{"config.toml:1: dispatcher.listen: must be a string (got table)"}},
		{"tui key", `
[tui.keys]
hold = ""
kill = 3
`, []string{
			"config.toml:2: tui.keys.hold: must not be empty",
			"config.toml:3: tui.keys.kill: must be a string (got integer)",
		}},
		{"all errors, in line order", `
[tui]
theme = "pink"
[dispatcher]
max_instances = -1
unknown = true
[cloud]
sync_interval = "soon"
`, []string{
			`config.toml:2: tui.theme: must be "auto", "dark" or "light" (got "pink")`,
			"config.toml:4: dispatcher.max_instances: must be >= 1 (got -1)",
			"config.toml:5: unknown key dispatcher.unknown",
			`config.toml:7: cloud.sync_interval: invalid duration "soon"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(doc(tc.src), "config.toml")
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if c != nil {
				t.Errorf("config returned with an error")
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %T is not Errors: %v", err, err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(es) {
				t.Errorf("Error() has %d lines for %d errors", len(lines), len(es))
			}
			if len(es) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(es), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(es[i].Error(), w) {
					t.Errorf("error %d = %q\nwant prefix %q", i, es[i].Error(), w)
				}
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "config.toml", Line: 12, Key: "dispatcher.max_instances", Msg: "must be >= 1 (got 0)"},
			"config.toml:12: dispatcher.max_instances: must be >= 1 (got 0)"},
		{Error{File: "config.toml", Line: 7, Msg: "unknown key dispatcher.max_instance"},
			"config.toml:7: unknown key dispatcher.max_instance"},
		{Error{File: "c.toml", Key: "k", Msg: "m"}, "c.toml: k: m"},
		{Error{Key: "k", Msg: "m"}, "k: m"},
		{Error{Line: 3, Msg: "m"}, "line 3: m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	_, err := Parse([]byte("x = 1"), "")
	if err == nil || !strings.HasPrefix(err.Error(), "<config>:1: unknown key x") {
		t.Errorf("Parse with no path: %v", err)
	}
}

func TestValidateInCode(t *testing.T) {
	c := Default()
	c.Path = "mem"
	c.Dispatcher.MaxInstances = 0
	c.InstanceTypes = append(c.InstanceTypes, cloud.InstanceType{Name: "small", ProviderType: "x", VCPUs: 1, RAM: 1})
	err := c.Validate()
	want := "mem: dispatcher.max_instances: must be >= 1 (got 0)\n" +
		`mem: instance_type[3].name: duplicate instance type name "small" (also instance_type[0])`
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v\nwant %v", err, want)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want a not-exist error", err)
	}
	path := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(path, []byte("[dispatcher]\nmax_instances = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || err.Error() != path+":2: dispatcher.max_instances: must be >= 1 (got 0)" {
		t.Errorf("Load(bad) = %v", err)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	xdg := filepath.Join(dir, "xdg")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("HOME", filepath.Join(dir, "home"))

	check := func(want string) {
		t.Helper()
		got, err := Find()
		if err != nil || got != want {
			t.Errorf("Find() = %q, %v; want %q", got, err, want)
		}
	}
	check("")
	c, err := FindAndLoad("")
	if err != nil || c.Path != "" || c.Dispatcher.MaxInstances != 64 {
		t.Errorf("FindAndLoad(\"\") with no file = %+v, %v; want defaults", c, err)
	}

	xdgFile := filepath.Join(xdg, "dispatch-tui", "config.toml")
	if err := os.MkdirAll(filepath.Dir(xdgFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(xdgFile, []byte("[dispatcher]\nmax_instances = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(xdgFile)
	if c, err := FindAndLoad(""); err != nil || c.Dispatcher.MaxInstances != 2 {
		t.Errorf("FindAndLoad(\"\") = %+v, %v; want the XDG file", c, err)
	}

	if err := os.WriteFile("dispatch-tui.toml", []byte("[dispatcher]\nmax_instances = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("dispatch-tui.toml")
	if c, err := FindAndLoad(""); err != nil || c.Dispatcher.MaxInstances != 3 {
		t.Errorf("FindAndLoad(\"\") = %+v, %v; want ./dispatch-tui.toml", c, err)
	}
	if c, err := FindAndLoad(xdgFile); err != nil || c.Dispatcher.MaxInstances != 2 {
		t.Errorf("FindAndLoad(explicit) = %+v, %v; want the explicit file", c, err)
	}

	// Without XDG_CONFIG_HOME, ~/.config is the default.
	t.Setenv("XDG_CONFIG_HOME", "")
	if err := os.Remove("dispatch-tui.toml"); err != nil {
		t.Fatal(err)
	}
	homeFile := filepath.Join(dir, "home", ".config", "dispatch-tui", "config.toml")
	if err := os.MkdirAll(filepath.Dir(homeFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(homeFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check(homeFile)
}

func TestRelativePaths(t *testing.T) {
	t.Setenv("HOME", "/home/op")
	c, err := Parse(doc(`
[dispatcher]
state_dir = "state"
[cloud]
ssh_key_file = "~/.ssh/id_ed25519"
known_hosts = "keys/known_hosts"
`), "/etc/dispatch-tui/config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Dispatcher.StateDir != "/etc/dispatch-tui/state" ||
		c.Cloud.SSHKeyFile != "/home/op/.ssh/id_ed25519" ||
		c.Cloud.KnownHosts != "/etc/dispatch-tui/keys/known_hosts" {
		t.Errorf("paths: state_dir %q, ssh_key_file %q, known_hosts %q",
			c.Dispatcher.StateDir, c.Cloud.SSHKeyFile, c.Cloud.KnownHosts)
	}
}

func TestHostAddressPort(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.0.0.1", "10.0.0.1:22"},
		{"10.0.0.1:2200", "10.0.0.1:2200"},
		{"host.example", "host.example:22"},
		{"::1", "[::1]:22"},
		{"[::1]", "[::1]:22"},
		{"[::1]:23", "[::1]:23"},
	} {
		if got := withPort(tc.in, 22); got != tc.want {
			t.Errorf("withPort(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0s", 0},
		{"90s", 90 * time.Second},
		{"10m", 10 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"500ms", 500 * time.Millisecond},
		{" 2s ", 2 * time.Second},
	} {
		got, err := ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if rt, err := ParseDuration(got.String()); err != nil || rt != got {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got.String(), rt, err, got)
		}
	}
	for _, in := range []string{"", "-1s", "-0.5h", "10", "5 minutes", "1d"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, d)
		}
	}
}

func TestLocator(t *testing.T) {
	src := `
# comment [not.a.table]
a = 1
"quoted.key" = 2
b.c = 3
s = '''
[fake]
x = 1'''
t = "with # hash and [brackets]"
[[arr]]
k = 1
[[arr]]
k = 2
[[arr.sub]]
m = { n = 1, o = [ { p = 1 }, { p = 2 } ] }
[arr.tab]
q = 1
[ 'lit' . "dq" ]
r = 1979-05-27 07:32:00Z
u = 5
`
	src = strings.TrimPrefix(src, "\n")
	loc := locate(src)
	for key, want := range map[string]int{
		`a`:                      2,
		`"quoted.key"`:           3,
		`b`:                      4,
		`b.c`:                    4,
		`s`:                      5,
		`fake`:                   0,
		`x`:                      0,
		`t`:                      8,
		`arr`:                    9,
		`arr[0]`:                 9,
		`arr[0].k`:               10,
		`arr[1]`:                 11,
		`arr[1].k`:               12,
		`arr[1].sub[0]`:          13,
		`arr[1].sub[0].m.n`:      14,
		`arr[1].sub[0].m.o[1]`:   14,
		`arr[1].sub[0].m.o[1].p`: 14,
		`arr[1].tab.q`:           16,
		`lit.dq.r`:               18,
		`lit.dq.u`:               19,
		`arr[5].missing`:         9, // falls back to the nearest known ancestor
		`nowhere`:                0,
	} {
		if got := loc.line(key); got != want {
			t.Errorf("line(%s) = %d, want %d", key, got, want)
		}
	}
}

func TestErrorsUnwrap(t *testing.T) {
	_, err := Parse([]byte("[dispatcher]\nmax_instances = 0\n"), "c.toml")
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Key != "dispatcher.max_instances" {
		t.Errorf("errors.As(*Error) = %+v from %v", e, err)
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		listen string
		want   bool
	}{
		{"127.0.0.1:9006", true},
		{"127.0.0.2:9006", true},
		{"[::1]:9006", true},
		{"localhost:9006", true},
		{"0.0.0.0:9006", false},
		{":9006", false},
		{"[::]:9006", false},
		{"10.1.2.3:9006", false},
		{"example.com:9006", false},
	} {
		if got := isLoopback(tc.listen); got != tc.want {
			t.Errorf("isLoopback(%q) = %v, want %v", tc.listen, got, tc.want)
		}
	}
}

func TestNonFiniteNumbers(t *testing.T) {
	_, err := Parse(doc(`
[dispatcher]
max_price_factor = inf
[[instance_type]]
name = "a"
vcpus = 1
ram = 1
price = nan
`), "c.toml")
	want := "c.toml:2: dispatcher.max_price_factor: must be a finite number (got +Inf)\n" +
		"c.toml:7: instance_type[0].price: must be a finite number (got NaN)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %v", err, want)
	}
}

func TestLocatorStrings(t *testing.T) {
	src := strings.TrimPrefix(`
a = "quote \" [x]\\"
b = """
line \"""
still = 1 \
"""
c = 'it''
d = """""x"""""
e = 1
`, "\n")
	loc := locate(src)
	for key, want := range map[string]int{"a": 1, "b": 2, "still": 0, "c": 6, "d": 7, "e": 8} {
		if got := loc.line(key); got != want {
			t.Errorf("line(%s) = %d, want %d", key, got, want)
		}
	}
}
