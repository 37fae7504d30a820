// Package config loads and validates the dispatcher's TOML configuration
// (docs/design.md §7.4): built-in defaults, sizes like "2GiB", durations like "90s",
// unknown keys rejected, and every error tied to its line in the file.
package config

import (
	"time"

	"dispatch-tui/cloud"
)

// Config is the whole, validated configuration. Sizes are bytes.
type Config struct {
	Dispatcher    Dispatcher
	Cloud         Cloud
	InstanceTypes []cloud.InstanceType // sorted by price, then name
	Containers    Containers
	TUI           TUI
	// Path is the file the config was read from ("" for built-in defaults).
	Path string
}

// Dispatcher is the [dispatcher] section.
type Dispatcher struct {
	Listen                   string
	Token                    string
	TokenFile                string
	StateDir                 string // resolved: never "" after Load/Default
	MaxInstances             int
	MaxContainersPerInstance int // 0 = unlimited (pack by resources)
	MaxPriceFactor           float64
	SchedulerProfile         string // "pack" or "spread"
	StaleLockTimeout         time.Duration
	ReserveExtraRAM          int64
	// MemoryLimit is the daemon's soft limit for Go memory (0 = none);
	// GOMEMLIMIT in the environment takes precedence.
	MemoryLimit int64
	// EventRetention is how many of the newest events the store keeps
	// (0 = all).
	EventRetention int
}

// Cloud is the [cloud] section.
type Cloud struct {
	Driver           string // "local" | "sshhosts" (tests also use "cloudtest")
	SSHUser          string
	SSHKeyFile       string
	SSHPort          int
	KnownHosts       string
	RunnerPath       string
	BootProbeCommand string
	TimeoutIdle      time.Duration
	TimeoutBooting   time.Duration
	TimeoutProbe     time.Duration
	TimeoutShutdown  time.Duration
	// TimeoutUnreachable: after this long unreachable, an instance's
	// containers are written off and requeued although they may still run
	// (0 = never).
	TimeoutUnreachable   time.Duration
	ProbeInterval        time.Duration
	SyncInterval         time.Duration
	MaxProbesPerSecond   float64
	MaxCloudOpsPerSecond float64
	MaxConcurrentCreates int
	Local                LocalDriver
	SSHHosts             SSHHostsDriver
}

// LocalDriver is [cloud.local].
type LocalDriver struct {
	BootDelay time.Duration
}

// SSHHostsDriver is [cloud.sshhosts].
type SSHHostsDriver struct {
	Hosts []SSHHost
}

// SSHHost is one [[cloud.sshhosts.host]].
type SSHHost struct {
	Address      string
	InstanceType string
	User         string // "" = [cloud] ssh_user
	KeyFile      string // "" = [cloud] ssh_key_file
	WorkDir      string
}

// Containers is the [containers] section.
type Containers struct {
	MaxAttempts int
	KillGrace   time.Duration
	// KeepFinished is how many Complete/Cancelled containers are kept,
	// newest first (0 = all); older ones are dropped with their output.
	KeepFinished int
}

// TUI is the [tui] section.
type TUI struct {
	Refresh  time.Duration
	Theme    string // auto | dark | light
	ReadOnly bool
	Keys     map[string]string // action name -> key
}
