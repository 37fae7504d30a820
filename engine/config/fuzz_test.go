package config

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse: Parse must never panic or hang; a config it accepts must pass
// Validate, and every error must name the file.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("../../config.toml.example"); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"[dispatcher]\nmax_instances = 0\n",
		"[[instance_type]]\nname = \"a\"\nvcpus = 1\nram = \"1GiB\"\n[[instance_type]]\nname = \"a\"\ncpus = 1\n",
		"dispatcher = 5\n[[cloud]]\n[instance_type]\n",
		"cloud = { local = { boot_dely = \"1s\" } }\ninstance_type = [{name = \"x\"}, 3]\n",
		"[cloud]\nboot_probe_command = \"\"\"\n[tui]\n\"\"\"\nx = [1,\n2]\n",
		"[tui.keys]\nhold = \"h\"\nkill = 1\n",
		"[dispatcher.listen]\nx = 1\n",
		"a = 1979-05-27 07:32:00Z\nb = { c = 1979-05-27 07:32:00 }\n",
		"[cloud]\ndriver = \"sshhosts\"\n[[cloud.sshhosts.host]]\naddress = \"::1\"\ninstance_type = \"small\"\n",
		"\ufeff[dispatcher]\nlisten = \"0.0.0.0:1\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.toml")
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error is not a non-empty Errors: %T %v", err, err)
			}
			for _, e := range es {
				if e.File != "fuzz.toml" {
					t.Fatalf("error without the file name: %v", e)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
		}
	})
}

// FuzzParseDuration: ParseDuration (config values and CLI flags) must never
// panic, never accept a negative duration, and round-trip what it accepts.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "10m", "1h30m", "0", "-1s", "1.5h", "", "9999999999h", "1us"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %s, negative", s, d)
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %s, which reads back as %s, %v", s, d, back, err)
		}
	})
}
