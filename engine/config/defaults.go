// The built-in configuration: every default value.

package config

import (
	"os"
	"path/filepath"
	"sort"
	"time"

	"dispatch-tui/cloud"
)

const (
	miB = int64(1) << 20
	giB = int64(1) << 30
)

// Default returns the built-in configuration (docs/design.md §7.4): the local
// driver, state under $XDG_STATE_HOME/dispatch-tui, and three instance types.
func Default() *Config {
	return &Config{
		Dispatcher: Dispatcher{
			TLS:                      "auto",
			MaxConnections:           256,
			StateDir:                 DefaultStateDir(),
			MaxInstances:             64,
			MaxContainersPerInstance: 1,
			MaxPriceFactor:           1.5,
			SchedulerProfile:         "pack",
			StaleLockTimeout:         time.Minute,
			ReserveExtraRAM:          256 * miB,
			MemoryLimit:              160 * miB,
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
			TimeoutUnreachable:   0, // never: see config.toml.example
			ProbeInterval:        10 * time.Second,
			SyncInterval:         time.Minute,
			MaxProbesPerSecond:   10,
			MaxCloudOpsPerSecond: 10,
			MaxConcurrentCreates: 1,
			Local:                LocalDriver{BootDelay: 2 * time.Second},
			Script:               defaultScript(),
			EC2: EC2Driver{
				AdminUser:         "dispatch-tui",
				RootVolumeType:    "gp3",
				ScratchVolumeType: "gp3",
				IMDSv2Required:    true,
				MetadataHopLimit:  1,
			},
		},
		InstanceTypes: DefaultInstanceTypes(),
		Containers: Containers{
			MaxAttempts:  3,
			KillGrace:    30 * time.Second,
			KeepFinished: 10000,
			MaxOutput:    4 * miB,
		},
		TUI: TUI{
			Refresh: time.Second,
			Theme:   "auto",
			Keys:    map[string]string{},
		},
	}
}

// DefaultInstanceTypes returns the instance types used when the config has
// no [[instance_type]]: a small set that suits the local driver.
func DefaultInstanceTypes() []cloud.InstanceType {
	return []cloud.InstanceType{
		{Name: "small", ProviderType: "small", VCPUs: 1, RAM: 1 * giB, Scratch: 10 * giB, Price: 0.02},
		{Name: "medium", ProviderType: "medium", VCPUs: 2, RAM: 4 * giB, Scratch: 20 * giB, Price: 0.08},
		{Name: "large", ProviderType: "large", VCPUs: 4, RAM: 16 * giB, Scratch: 40 * giB, Price: 0.30},
	}
}

// DefaultStateDir is where state lives when state_dir is "":
// $XDG_STATE_HOME/dispatch-tui, else $HOME/.local/state/dispatch-tui (a
// relative $XDG_STATE_HOME is ignored, as the XDG spec says). Without a home
// directory it falls back to a directory under os.TempDir().
func DefaultStateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "dispatch-tui")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "dispatch-tui")
	}
	return filepath.Join(os.TempDir(), "dispatch-tui-state")
}

// sortInstanceTypes orders types by price, then name.
func sortInstanceTypes(its []cloud.InstanceType) {
	sort.SliceStable(its, func(i, j int) bool {
		if its[i].Price != its[j].Price {
			return its[i].Price < its[j].Price
		}
		return its[i].Name < its[j].Name
	})
}
