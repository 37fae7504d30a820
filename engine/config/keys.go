// The key table: every key of the file, with its type, default, check and
// doc line. Parsing, Default, Validate and the test of config.toml.example
// all read it; a key is added by adding its row (see the package doc).

package config

import (
	"fmt"
	"slices"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// table is every key, in the order their checks run.
var table = slices.Concat(dispatcherKeys, cloudKeys, ec2Keys, scriptKeys, []*row{typeKeys, budgetKeys}, containerKeys, tuiKeys, storeKeys, haKeys)

// [dispatcher]
var dispatcherKeys = []*row{
	str("dispatcher.listen", "", func(c *Config, _ int) *string { return &c.Dispatcher.Listen },
		`TCP address of the API and /metrics; "" = the unix socket in state_dir only`, listenAddr),
	pointAt(str("dispatcher.token", "", func(c *Config, _ int) *string { return &c.Dispatcher.Token },
		`the operator token named "default"`, tokenRequired), "dispatcher.listen"),
	path("dispatcher.token_file", func(c *Config, _ int) *string { return &c.Dispatcher.TokenFile },
		"file holding dispatcher.token"),
	commented(tables("dispatcher.tokens", func() []APIToken { return nil }, func(c *Config) *[]APIToken { return &c.Dispatcher.Tokens },
		"named tokens, each a viewer or an operator", []*row{
			str("dispatcher.tokens.name", "", func(c *Config, i int) *string { return &c.Dispatcher.Tokens[i].Name },
				`the token's name: the actor "token:<name>" of its events`, apiTokenName),
			str("dispatcher.tokens.role", RoleViewer, func(c *Config, i int) *string { return &c.Dispatcher.Tokens[i].Role },
				"what the token may do", oneOf(RoleViewer, RoleOperator)),
			str("dispatcher.tokens.token", "", func(c *Config, i int) *string { return &c.Dispatcher.Tokens[i].Token },
				"the secret", distinctSecret),
			path("dispatcher.tokens.token_file", func(c *Config, i int) *string { return &c.Dispatcher.Tokens[i].TokenFile },
				"file holding the secret"),
		})),
	str("dispatcher.socket_group", "", func(c *Config, _ int) *string { return &c.Dispatcher.SocketGroup },
		`group allowed to use the API socket; "" = only this user`),
	str("dispatcher.tls", "auto", func(c *Config, _ int) *string { return &c.Dispatcher.TLS },
		"TLS on the TCP listener: auto (off loopback), on or off", oneOf("auto", "on", "off"), tlsOffLoopback),
	path("dispatcher.tls_cert", func(c *Config, _ int) *string { return &c.Dispatcher.TLSCert },
		`PEM certificate of the TCP listener; "" = a self-signed one in state_dir`),
	path("dispatcher.tls_key", func(c *Config, _ int) *string { return &c.Dispatcher.TLSKey },
		"PEM key of tls_cert", tlsPair),
	integer("dispatcher.max_connections", 256, func(c *Config, _ int) *int { return &c.Dispatcher.MaxConnections },
		"most open API connections per listener", atLeast(1)),
	path("dispatcher.state_dir", func(c *Config, _ int) *string { return &c.Dispatcher.StateDir },
		`where the store and other state live; "" = $XDG_STATE_HOME/dispatch-tui`, notEmpty),
	str("dispatcher.cluster_id", "", func(c *Config, _ int) *string { return &c.Dispatcher.ClusterID },
		`this dispatcher's identity in its instances' owner tag; "" = the one kept in the store`, clusterID),
	integer("dispatcher.max_instances", 64, func(c *Config, _ int) *int { return &c.Dispatcher.MaxInstances },
		"most instances at once", atLeast(1)),
	integer("dispatcher.max_containers_per_instance", 1, func(c *Config, _ int) *int { return &c.Dispatcher.MaxContainersPerInstance },
		"most containers on one instance; 0 = unlimited", atLeast(0)),
	number("dispatcher.max_price_factor", 1.5, func(c *Config, _ int) *float64 { return &c.Dispatcher.MaxPriceFactor },
		"how much dearer than the cheapest fitting type a container may run", atLeast(1.0)),
	str("dispatcher.scheduler_profile", "pack", func(c *Config, _ int) *string { return &c.Dispatcher.SchedulerProfile },
		"placement on busy instances first (pack) or idle ones (spread)", oneOf("pack", "spread")),
	duration("dispatcher.stale_lock_timeout", time.Minute, func(c *Config, _ int) *time.Duration { return &c.Dispatcher.StaleLockTimeout },
		"a lock held this long with no instance running its container is released", positive),
	size("dispatcher.reserve_extra_ram", 256*miB, func(c *Config, _ int) *int64 { return &c.Dispatcher.ReserveExtraRAM },
		"added to a container's RAM when choosing its instance type", notNegative),
	size("dispatcher.memory_limit", 160*miB, func(c *Config, _ int) *int64 { return &c.Dispatcher.MemoryLimit },
		fmt.Sprintf("the floor of the daemon's soft limit for Go memory (raised to %g times the live heap past it); 0 = none", LiveHeapRoom), memoryLimit),
	integer("dispatcher.event_retention", 200000, func(c *Config, _ int) *int { return &c.Dispatcher.EventRetention },
		"how many of the newest events are kept; 0 = all", atLeast(0)),
	number("dispatcher.supervisor_fraction", 0.3, func(c *Config, _ int) *float64 { return &c.Dispatcher.SupervisorFraction },
		"cap on supervisor containers, as a fraction of the instance limit; 0 = none", supervisorFraction),
	number("dispatcher.max_hourly_cost", 0, func(c *Config, _ int) *float64 { return &c.Dispatcher.MaxHourlyCost },
		"cap on the fleet's $/h: no instance is created past it; 0 = none", fleetCap),
}

// [cloud], [cloud.local], [[cloud.sshhosts.host]]
var cloudKeys = []*row{
	str("cloud.driver", "local", func(c *Config, _ int) *string { return &c.Cloud.Driver },
		"the instance provider", oneOf(Drivers...)),
	str("cloud.ssh_user", "", func(c *Config, _ int) *string { return &c.Cloud.SSHUser },
		"SSH user of hosts that set none"),
	path("cloud.ssh_key_file", func(c *Config, _ int) *string { return &c.Cloud.SSHKeyFile },
		"the dispatcher's SSH private key"),
	integer("cloud.ssh_port", 22, func(c *Config, _ int) *int { return &c.Cloud.SSHPort },
		"SSH port of addresses written without one", between(1, 65535)),
	path("cloud.known_hosts", func(c *Config, _ int) *string { return &c.Cloud.KnownHosts },
		"OpenSSH known_hosts file that sshhosts host keys are checked against"),
	str("cloud.runner_path", "/tmp/dispatch-tui-runner", func(c *Config, _ int) *string { return &c.Cloud.RunnerPath },
		"where the runner is installed on each instance", runnerPath),
	str("cloud.boot_probe_command", "true", func(c *Config, _ int) *string { return &c.Cloud.BootProbeCommand },
		"command whose success makes a new instance ready"),
	duration("cloud.timeout_idle", time.Minute, func(c *Config, _ int) *time.Duration { return &c.Cloud.TimeoutIdle },
		"an instance idle this long is shut down", notNegative),
	duration("cloud.timeout_booting", 10*time.Minute, func(c *Config, _ int) *time.Duration { return &c.Cloud.TimeoutBooting },
		"an instance not ready this long after its create is shut down", positive),
	duration("cloud.timeout_probe", 10*time.Minute, func(c *Config, _ int) *time.Duration { return &c.Cloud.TimeoutProbe },
		"an instance whose probes fail this long is shut down", positive),
	duration("cloud.timeout_runner_call", 10*time.Second, func(c *Config, _ int) *time.Duration { return &c.Cloud.TimeoutRunnerCall },
		"deadline of a ready instance's probe call; calls that install or start things get max(this, 1m)", positive),
	duration("cloud.timeout_shutdown", 10*time.Second, func(c *Config, _ int) *time.Duration { return &c.Cloud.TimeoutShutdown },
		"a destroyed instance still listed this long is destroyed again", positive),
	duration("cloud.timeout_unreachable", 0, func(c *Config, _ int) *time.Duration { return &c.Cloud.TimeoutUnreachable },
		"an instance unreachable this long has its containers requeued; 0 = never", notNegative, unreachableAfterProbe),
	duration("cloud.probe_interval", 10*time.Second, func(c *Config, _ int) *time.Duration { return &c.Cloud.ProbeInterval },
		"how often each instance is probed", positive),
	duration("cloud.sync_interval", time.Minute, func(c *Config, _ int) *time.Duration { return &c.Cloud.SyncInterval },
		"how often the provider's instance list is read", positive),
	number("cloud.max_probes_per_second", 10, func(c *Config, _ int) *float64 { return &c.Cloud.MaxProbesPerSecond },
		"most probes started per second", positive),
	number("cloud.max_cloud_ops_per_second", 10, func(c *Config, _ int) *float64 { return &c.Cloud.MaxCloudOpsPerSecond },
		"most provider calls per second", positive),
	integer("cloud.max_concurrent_creates", 1, func(c *Config, _ int) *int { return &c.Cloud.MaxConcurrentCreates },
		"most instance creates in flight", atLeast(1)),

	// [cloud.local]
	duration("cloud.local.boot_delay", 2*time.Second, func(c *Config, _ int) *time.Duration { return &c.Cloud.Local.BootDelay },
		"simulated boot time of a local instance", notNegative),

	// [[cloud.sshhosts.host]]
	commented(pointAt(tables("cloud.sshhosts.host", func() []SSHHost { return nil }, func(c *Config) *[]SSHHost { return &c.Cloud.SSHHosts.Hosts },
		"the existing hosts of driver sshhosts", []*row{
			str("cloud.sshhosts.host.address", "", func(c *Config, i int) *string { return &c.Cloud.SSHHosts.Hosts[i].Address },
				"host:port; the port defaults to cloud.ssh_port", hostAddress),
			str("cloud.sshhosts.host.instance_type", "", func(c *Config, i int) *string { return &c.Cloud.SSHHosts.Hosts[i].InstanceType },
				"the [[instance_type]] describing the host", hostType),
			str("cloud.sshhosts.host.user", "", func(c *Config, i int) *string { return &c.Cloud.SSHHosts.Hosts[i].User },
				`SSH user; "" = cloud.ssh_user`),
			path("cloud.sshhosts.host.key_file", func(c *Config, i int) *string { return &c.Cloud.SSHHosts.Hosts[i].KeyFile },
				`SSH private key; "" = cloud.ssh_key_file`),
			str("cloud.sshhosts.host.work_dir", "", func(c *Config, i int) *string { return &c.Cloud.SSHHosts.Hosts[i].WorkDir },
				"directory the runner's commands run in"),
			strMap("cloud.sshhosts.host.labels", nil, func(c *Config, i int) *map[string]string { return &c.Cloud.SSHHosts.Hosts[i].Labels },
				"labels added to its instance type's"),
		}, sshhostsNeedHosts), "cloud.driver")),
}

// [[instance_type]]
var typeKeys = tables("instance_type", DefaultInstanceTypes, func(c *Config) *[]cloud.InstanceType { return &c.InstanceTypes },
	"the instance types the dispatcher may create; listing any replaces the built-in ones", []*row{
		str("instance_type.name", "", func(c *Config, i int) *string { return &c.InstanceTypes[i].Name },
			"the type's name in the UI, the API and [[cloud.sshhosts.host]]", typeName),
		str("instance_type.provider_type", "", func(c *Config, i int) *string { return &c.InstanceTypes[i].ProviderType },
			"the provider's name for it; defaults to name", notEmpty),
		integer("instance_type.vcpus", 0, func(c *Config, i int) *int { return &c.InstanceTypes[i].VCPUs },
			"virtual CPUs", atLeast(1)),
		size("instance_type.ram", 0, func(c *Config, i int) *int64 { return &c.InstanceTypes[i].RAM },
			"memory", positiveSize),
		size("instance_type.scratch", 0, func(c *Config, i int) *int64 { return &c.InstanceTypes[i].Scratch },
			"scratch disk space", notNegative),
		integer("instance_type.gpus", 0, func(c *Config, i int) *int { return &c.InstanceTypes[i].GPUs },
			"GPUs", atLeast(0)),
		number("instance_type.price", 0, func(c *Config, i int) *float64 { return &c.InstanceTypes[i].Price },
			"price per hour", atLeast(0.0)),
		boolean("instance_type.preemptible", false, func(c *Config, i int) *bool { return &c.InstanceTypes[i].Preemptible },
			"the provider may reclaim such instances at any time (spot)"),
		strMap("instance_type.labels", nil, func(c *Config, i int) *map[string]string { return &c.InstanceTypes[i].Labels },
			"what containers' scheduling.constraints match", labelKeys),
	}, atLeastOneType, fewLabels)

// [containers]
var containerKeys = []*row{
	integer("containers.max_attempts", 3, func(c *Config, _ int) *int { return &c.Containers.MaxAttempts },
		"default max_attempts of a container", atLeast(1)),
	duration("containers.kill_grace", 30*time.Second, func(c *Config, _ int) *time.Duration { return &c.Containers.KillGrace },
		"time between SIGTERM and SIGKILL", notNegative),
	integer("containers.keep_finished", 10000, func(c *Config, _ int) *int { return &c.Containers.KeepFinished },
		"how many finished containers are kept; 0 = all", atLeast(0)),
	size("containers.max_output", 4*miB, func(c *Config, _ int) *int64 { return &c.Containers.MaxOutput },
		"how much of a finished container's output is kept, its end", maxOutput),
	boolean("containers.always_use_preemptible", false, func(c *Config, _ int) *bool { return &c.Containers.AlwaysUsePreemptible },
		"scheduling.preemptible of a container submitted without one"),
}

// [tui]
var tuiKeys = []*row{
	duration("tui.refresh", time.Second, func(c *Config, _ int) *time.Duration { return &c.TUI.Refresh },
		"how often the screen is redrawn", positive),
	str("tui.theme", "auto", func(c *Config, _ int) *string { return &c.TUI.Theme },
		"colour theme", oneOf("auto", "dark", "light")),
	boolean("tui.read_only", false, func(c *Config, _ int) *bool { return &c.TUI.ReadOnly },
		"view only: no verbs"),
	commented(strMap("tui.keys", map[string]string{}, func(c *Config, _ int) *map[string]string { return &c.TUI.Keys },
		"key binding overrides, action = key", keyBindings)),
}

// Checks of single keys of the sections above.

func clusterID(v string, s *site) {
	if v == "" {
		return
	}
	if err := CheckClusterID(v); err != nil {
		s.bad("%v", err)
	}
}

// LiveHeapRoom is how many times its live heap the daemon's soft memory
// limit is once the heap outgrows dispatcher.memory_limit (memlimit.go,
// docs/design.md §9.1 for why 1.75).
const LiveHeapRoom = 1.75

func memoryLimit(v int64, s *site) {
	if v != 0 && v < 32*miB {
		s.bad("must be 0 (no limit) or at least 32MiB (got %d bytes)", v)
	}
}

func supervisorFraction(v float64, s *site) {
	if !(v >= 0 && v <= 1) {
		s.bad("must be between 0 (no limit) and 1 (got %g)", v)
	}
}

func unreachableAfterProbe(v time.Duration, s *site) {
	if probe := s.c.Cloud.TimeoutProbe; v > 0 && v < probe {
		s.bad("must be 0 (off) or at least timeout_probe (%s): an instance is given up for failing probes first (got %s)", probe, v)
	}
}

func positiveSize(v int64, s *site) {
	if v <= 0 {
		s.bad("must be > 0 (got %d)", v)
	}
}

// maxOutput: under a KiB nothing would be kept (the cut is in whole KiB);
// over the runner's limit, one reply could outgrow what a call returns.
func maxOutput(v int64, s *site) {
	if v < runner.OutputCutUnit || v > runner.MaxOutputLimit {
		s.bad("must be between 1KiB and %s (got %s)", view.FormatSize(runner.MaxOutputLimit), view.FormatSize(v))
	}
}

func keyBindings(v map[string]string, s *site) {
	for _, action := range sortedKeys(v) {
		if v[action] == "" {
			s.badEntry(action, "must not be empty")
		}
	}
}
