// Package config loads and validates the dispatcher's TOML configuration
// (docs/design.md §7.4): built-in defaults, sizes like "2GiB", durations like "90s",
// unknown keys rejected, and every error tied to its line in the file.
//
// One table, the key table, holds every key with its type, default, check
// and doc line. Parse decodes a file once, into a generic map, and walks it
// along the table; the only other pass is a scan of the text for line
// numbers. Default, Validate and the test that holds
// config.toml.example to the table read the same rows.
//
// Adding a key is one row: give its section's struct below a field for it,
// then add a row to the table with the constructor of its kind (str, path,
// integer, number, boolean, size, duration, strs, argv, strMap; tables for
// an array of tables), its default, a pointer to the field, a doc line and
// its checks (the common ones are kept beside the table; a check may read
// other keys).
// Then show the key with its default in config.toml.example:
// TestExampleConfig fails until it is there.
package config

import (
	"path/filepath"
	"time"

	"dispatch-tui/cloud"
)

// Config is the whole, validated configuration. Sizes are bytes.
type Config struct {
	Dispatcher    Dispatcher
	Cloud         Cloud
	InstanceTypes []cloud.InstanceType // sorted by price, then name
	// Budgets are the [[budget]] caps on the $/h of the containers of a
	// label (budget.go).
	Budgets    []Budget
	Containers Containers
	TUI        TUI
	Store      Store
	HA         HA
	// Path is the file the config was read from ("" for built-in defaults).
	Path string
	// Warnings are what Parse read but wants written otherwise (an old
	// name, drivers.go), with their lines; the config works as it is.
	Warnings []*Error
	// holdsSecret names the secret the file itself holds ("": none),
	// for Load to check the file as secret files are.
	holdsSecret string
}

// Dispatcher is the [dispatcher] section.
type Dispatcher struct {
	// Listen is the TCP address of the API; "" (the default) serves it
	// only on the unix socket in StateDir.
	Listen string
	// Token and TokenFile are the single token of older configs: an
	// operator token named "default" (see APITokens).
	Token     string
	TokenFile string
	// Tokens are the named [[dispatcher.tokens]], each with a role.
	Tokens []APIToken
	// SocketGroup, when set, makes the API socket 0660 with this group
	// (and the state dir 0710 with it) so its members may drive the
	// dispatcher; "" keeps the socket to the dispatcher's own user.
	SocketGroup string
	// TLS is "auto" (TLS off loopback, plain HTTP on it), "on" or "off"
	// (refused off loopback).
	TLS string
	// TLSCert and TLSKey are PEM files; "" = a self-signed pair kept in
	// StateDir.
	TLSCert string
	TLSKey  string
	// MaxConnections caps the API's open connections (TCP and socket
	// each).
	MaxConnections int
	StateDir       string // resolved: never "" after Load/Default
	// ClusterID is this dispatcher's identity in the owner tag of its
	// instances; "" = the one kept in the state dir (made up on first use).
	ClusterID                string
	MaxInstances             int
	MaxContainersPerInstance int // 0 = unlimited (pack by resources)
	MaxPriceFactor           float64
	SchedulerProfile         string // "pack" or "spread"
	StaleLockTimeout         time.Duration
	ReserveExtraRAM          int64
	// MaxHourlyCost caps the fleet's $/h: no instance is created that
	// would take it past (0 = no cap; budget.go).
	MaxHourlyCost float64
	// MemoryLimit is the daemon's soft limit for Go memory (0 = none);
	// GOMEMLIMIT in the environment takes precedence.
	MemoryLimit int64
	// EventRetention is how many of the newest events the store keeps
	// (0 = all).
	EventRetention int
	// SupervisorFraction caps the supervisor containers Locked or Running
	// at once at this fraction of the effective instance limit (at least
	// 1); 0 = no cap.
	SupervisorFraction float64
}

// Token roles: a viewer reads, an operator also changes things.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
)

// DefaultTokenName names the token of dispatcher.token / token_file.
const DefaultTokenName = "default"

// APIToken is one [[dispatcher.tokens]]: Token holds the secret, read
// from TokenFile when that is set.
type APIToken struct {
	Name      string
	Role      string // RoleViewer or RoleOperator
	Token     string
	TokenFile string
}

// APITokens lists every token clients may present: dispatcher.token (or
// token_file) as the operator token "default", then [[dispatcher.tokens]].
func (d *Dispatcher) APITokens() []APIToken {
	var out []APIToken
	if d.Token != "" {
		out = append(out, APIToken{Name: DefaultTokenName, Role: RoleOperator, Token: d.Token, TokenFile: d.TokenFile})
	}
	return append(out, d.Tokens...)
}

// SocketPath is where the API's unix socket lives: in the state dir.
func (d *Dispatcher) SocketPath() string {
	return filepath.Join(d.StateDir, SocketName)
}

// SocketName is the file name of the API socket in the state dir.
const SocketName = "dispatch-tui.sock"

// Cloud is the [cloud] section.
type Cloud struct {
	Driver            string // one of Drivers
	SSHUser           string
	SSHKeyFile        string
	SSHPort           int
	KnownHosts        string
	RunnerPath        string
	BootProbeCommand  string
	TimeoutIdle       time.Duration
	TimeoutBooting    time.Duration
	TimeoutProbe      time.Duration
	TimeoutRunnerCall time.Duration // deadline of a ready instance's probe call; others get max(this, 1m) (docs/design.md §6)
	TimeoutShutdown   time.Duration
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
	Script               ScriptDriver

	EC2 EC2Driver
}

// LocalDriver is [cloud.local].
type LocalDriver struct {
	BootDelay time.Duration
}

// EC2Driver is [cloud.ec2]: the Amazon EC2 driver (cloud/ec2).
type EC2Driver struct {
	Region   string
	Profile  string // shared-config profile; "" = the default credential chain
	Endpoint string // API endpoint URL override; "" = AWS's
	ImageID  string
	// SubnetIDs are tried in turn when a subnet cannot take an instance;
	// empty = the default VPC's choice.
	SubnetIDs        []string
	SecurityGroupIDs []string
	// KeyPairName: "" = none (the user-data authorizes the dispatcher's
	// key).
	KeyPairName        string
	AdminUser          string
	RootVolumeSize     int64 // 0 = the image's
	RootVolumeType     string
	ScratchVolumeType  string // the scratch volume's size is the instance type's scratch
	IAMInstanceProfile string
	Tags               map[string]string
	UsePrivateIP       bool
	// IMDSv2Required may only be true: the instances' metadata service
	// always requires tokens (the key stays so that old configs load).
	IMDSv2Required bool
	// MetadataHopLimit is the instances' HttpPutResponseHopLimit: 1 keeps
	// a metadata token (so the user-data, the instance secret and the
	// role's credentials) from containers on a docker bridge.
	MetadataHopLimit int
	// SpotPriceInterval is how often the spot prices of the spot types in
	// use are read (DescribeSpotPriceHistory).
	SpotPriceInterval time.Duration
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
	// Labels are added to its instance type's labels; every host of a type
	// must carry the same ones.
	Labels map[string]string
}

// Containers is the [containers] section.
type Containers struct {
	MaxAttempts int
	KillGrace   time.Duration
	// KeepFinished is how many Complete/Cancelled containers are kept,
	// newest first (0 = all); older ones are dropped with their output.
	KeepFinished int
	// MaxOutput is how much of a finished container's output is kept, its
	// end: what is over it is dropped from the start, and the container's
	// logs_truncated says how much.
	MaxOutput int64
	// AlwaysUsePreemptible is the scheduling.preemptible of a container
	// submitted without one (docs/design.md §5, Preemptible).
	AlwaysUsePreemptible bool
}

// TUI is the [tui] section.
type TUI struct {
	Refresh  time.Duration
	Theme    string // auto | dark | light
	ReadOnly bool
	Keys     map[string]string // action name -> key
}
