package config

import (
	"testing"
)

// The fake driver's old name is read for one release: the config loads as
// if it said "fake", with a warning on the driver's line that says what to
// write. The new name loads without one.
func TestOldDriverNameWarns(t *testing.T) {
	for _, tc := range []struct {
		name, driver string
		warning      string // "" = none
	}{
		{"old name", "cloudtest", `config.toml:4: cloud.driver: "cloudtest" is the old name of the "fake" driver, still read in this release only: write driver = "fake"`},
		{"new name", "fake", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "[dispatcher]\nmax_instances = 2\n[cloud]\ndriver = \"" + tc.driver + "\"\n"
			c, err := Parse([]byte(src), "config.toml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.Cloud.Driver != "fake" {
				t.Errorf("cloud.driver = %q, want \"fake\"", c.Cloud.Driver)
			}
			var got []string
			for _, w := range c.Warnings {
				got = append(got, w.Error())
			}
			switch {
			case tc.warning == "" && len(got) != 0:
				t.Errorf("warnings %q, want none", got)
			case tc.warning != "" && (len(got) != 1 || got[0] != tc.warning):
				t.Errorf("warnings %q, want exactly %q", got, tc.warning)
			}
		})
	}
}
