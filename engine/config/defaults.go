// The built-in configuration, and what the defaults of some keys resolve to.

package config

import (
	"os"
	"path/filepath"
	"sort"

	"dispatch-tui/cloud"
)

const (
	miB = int64(1) << 20
	giB = int64(1) << 30
)

// Default returns the built-in configuration (docs/design.md §7.4): the
// defaults of the key table (keys.go), the local driver, state under
// $XDG_STATE_HOME/dispatch-tui, and three instance types.
func Default() *Config {
	c := defaults()
	resolveStateDir(&c.Dispatcher)
	resolveHA(c)
	return c
}

// defaults is a Config holding every key's default as the table gives it.
func defaults() *Config {
	c := &Config{}
	for _, r := range table {
		r.reset(c, 0)
	}
	return c
}

// resolveStateDir gives an empty state_dir its meaning.
func resolveStateDir(d *Dispatcher) {
	if d.StateDir == "" {
		d.StateDir = DefaultStateDir()
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
