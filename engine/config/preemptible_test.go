package config

import (
	"strings"
	"testing"
)

func TestAlwaysUsePreemptible(t *testing.T) {
	if Default().Containers.AlwaysUsePreemptible {
		t.Fatal("always_use_preemptible defaults to true, want false")
	}
	for _, tc := range []struct {
		toml string
		want bool
		err  string
	}{
		{"[containers]\nalways_use_preemptible = true\n", true, ""},
		{"[containers]\nalways_use_preemptible = false\n", false, ""},
		{"[containers]\nmax_attempts = 2\n", false, ""},
		{"[containers]\nalways_use_preemptible = \"yes\"\n", false, "config.toml:2: containers.always_use_preemptible: must be true or false"},
	} {
		cfg, err := Parse([]byte(tc.toml), "config.toml")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.toml, err, tc.err)
			}
			continue
		}
		if err != nil || cfg.Containers.AlwaysUsePreemptible != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.toml, cfg.Containers.AlwaysUsePreemptible, err, tc.want)
		}
	}
}
