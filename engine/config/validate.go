package config

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Validate checks c's values: ranges, enumerations, instance types and
// hosts. Parse and Load already do this (with line numbers); Validate is
// for configs built or changed in code. It returns Errors or nil.
func (c *Config) Validate() error {
	es := c.validate()
	if len(es) == 0 {
		return nil
	}
	for _, e := range es {
		e.File = c.Path
	}
	return Errors(es)
}

// validator collects validation errors; they carry keys, not lines.
type validator struct{ errs []*Error }

func (v *validator) add(key, format string, args ...any) *Error {
	e := &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
	v.errs = append(v.errs, e)
	return e
}

func (v *validator) minInt(key string, n, lo int) {
	if n < lo {
		v.add(key, "must be >= %d (got %d)", lo, n)
	}
}

func (v *validator) intRange(key string, n, lo, hi int) {
	if n < lo || n > hi {
		v.add(key, "must be between %d and %d (got %d)", lo, hi, n)
	}
}

func (v *validator) minFloat(key string, f, lo float64) {
	if !(f >= lo) || math.IsInf(f, 0) {
		v.add(key, "must be >= %v (got %v)", lo, f)
	}
}

func (v *validator) positiveFloat(key string, f float64) {
	if !(f > 0) || math.IsInf(f, 0) {
		v.add(key, "must be > 0 (got %v)", f)
	}
}

func (v *validator) positiveDur(key string, d time.Duration) {
	if d <= 0 {
		v.add(key, "must be > 0 (got %v)", d)
	}
}

func (v *validator) nonNegDur(key string, d time.Duration) {
	if d < 0 {
		v.add(key, "must not be negative (got %v)", d)
	}
}

func (v *validator) nonEmpty(key, s string) {
	if s == "" {
		v.add(key, "must not be empty")
	}
}

func (v *validator) oneOf(key, s string, allowed ...string) {
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = strconv.Quote(a)
	}
	list := strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
	v.add(key, "must be %s (got %q)", list, s)
}

// hostPort checks a "host:port" address; lowPort is the smallest port
// allowed (0 lets the system choose, for a listen address).
func (v *validator) hostPort(key, addr string, lowPort int) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.add(key, "must be host:port (got %q)", addr)
		return false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < lowPort || n > 65535 {
		v.add(key, "port must be a number between %d and 65535 (got %q)", lowPort, addr)
		return false
	}
	return true
}

// isLoopback reports whether a listen address only accepts local
// connections.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) validate() []*Error {
	var v validator

	d := &c.Dispatcher
	if v.hostPort("dispatcher.listen", d.Listen, 0) && d.Token == "" && !isLoopback(d.Listen) {
		e := v.add("dispatcher.token", "required when listen (%s) is not a loopback address: set token or token_file", d.Listen)
		e.lineKey = "dispatcher.listen"
	}
	v.nonEmpty("dispatcher.state_dir", d.StateDir)
	v.minInt("dispatcher.max_instances", d.MaxInstances, 1)
	v.minInt("dispatcher.max_containers_per_instance", d.MaxContainersPerInstance, 0)
	v.minInt("dispatcher.event_retention", d.EventRetention, 0)
	v.minFloat("dispatcher.max_price_factor", d.MaxPriceFactor, 1)
	v.oneOf("dispatcher.scheduler_profile", d.SchedulerProfile, "pack", "spread")
	v.positiveDur("dispatcher.stale_lock_timeout", d.StaleLockTimeout)
	if d.ReserveExtraRAM < 0 {
		v.add("dispatcher.reserve_extra_ram", "must not be negative (got %d)", d.ReserveExtraRAM)
	}
	if d.MemoryLimit != 0 && d.MemoryLimit < 32*miB {
		v.add("dispatcher.memory_limit", "must be 0 (no limit) or at least 32MiB (got %d bytes)", d.MemoryLimit)
	}

	cl := &c.Cloud
	v.oneOf("cloud.driver", cl.Driver, "local", "sshhosts", "cloudtest")
	v.intRange("cloud.ssh_port", cl.SSHPort, 1, 65535)
	v.nonEmpty("cloud.runner_path", cl.RunnerPath)
	v.nonNegDur("cloud.timeout_idle", cl.TimeoutIdle)
	v.positiveDur("cloud.timeout_booting", cl.TimeoutBooting)
	v.positiveDur("cloud.timeout_probe", cl.TimeoutProbe)
	v.positiveDur("cloud.timeout_shutdown", cl.TimeoutShutdown)
	v.positiveDur("cloud.probe_interval", cl.ProbeInterval)
	v.positiveDur("cloud.sync_interval", cl.SyncInterval)
	v.positiveFloat("cloud.max_probes_per_second", cl.MaxProbesPerSecond)
	v.positiveFloat("cloud.max_cloud_ops_per_second", cl.MaxCloudOpsPerSecond)
	v.minInt("cloud.max_concurrent_creates", cl.MaxConcurrentCreates, 1)
	v.nonNegDur("cloud.local.boot_delay", cl.Local.BootDelay)

	if len(c.InstanceTypes) == 0 {
		v.add("instance_type", "at least one [[instance_type]] is required")
	}
	types := map[string]int{} // name → index
	for i, it := range c.InstanceTypes {
		k := fmt.Sprintf("instance_type[%d].", i)
		if it.Name == "" {
			v.add(k+"name", "must not be empty")
		} else if j, dup := types[it.Name]; dup {
			v.add(k+"name", "duplicate instance type name %q (also instance_type[%d])", it.Name, j)
		} else {
			types[it.Name] = i
		}
		v.nonEmpty(k+"provider_type", it.ProviderType)
		v.minInt(k+"vcpus", it.VCPUs, 1)
		if it.RAM <= 0 {
			v.add(k+"ram", "must be > 0 (got %d)", it.RAM)
		}
		if it.Scratch < 0 {
			v.add(k+"scratch", "must not be negative (got %d)", it.Scratch)
		}
		v.minInt(k+"gpus", it.GPUs, 0)
		v.minFloat(k+"price", it.Price, 0)
	}

	if cl.Driver == "sshhosts" && len(cl.SSHHosts.Hosts) == 0 {
		e := v.add("cloud.sshhosts.host", "driver \"sshhosts\" needs at least one [[cloud.sshhosts.host]]")
		e.lineKey = "cloud.driver"
	}
	addrs := map[string]int{} // address → index
	for i, h := range cl.SSHHosts.Hosts {
		k := fmt.Sprintf("cloud.sshhosts.host[%d].", i)
		switch {
		case h.Address == "":
			v.add(k+"address", "must not be empty")
		case !v.hostPort(k+"address", h.Address, 1):
		default:
			if j, dup := addrs[h.Address]; dup {
				v.add(k+"address", "duplicate address %q (also cloud.sshhosts.host[%d])", h.Address, j)
			} else {
				addrs[h.Address] = i
			}
		}
		if h.InstanceType == "" {
			v.add(k+"instance_type", "must not be empty")
		} else if _, ok := types[h.InstanceType]; !ok {
			names := make([]string, 0, len(types))
			for n := range types {
				names = append(names, n)
			}
			sort.Strings(names)
			v.add(k+"instance_type", "unknown instance type %q (known: %s)", h.InstanceType, strings.Join(names, ", "))
		}
	}

	ct := &c.Containers
	v.minInt("containers.max_attempts", ct.MaxAttempts, 1)
	v.nonNegDur("containers.kill_grace", ct.KillGrace)
	v.minInt("containers.keep_finished", ct.KeepFinished, 0)

	t := &c.TUI
	v.positiveDur("tui.refresh", t.Refresh)
	v.oneOf("tui.theme", t.Theme, "auto", "dark", "light")
	actions := make([]string, 0, len(t.Keys))
	for a := range t.Keys {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		if t.Keys[a] == "" {
			v.add(joinKey("tui.keys", a), "must not be empty")
		}
	}
	return v.errs
}
