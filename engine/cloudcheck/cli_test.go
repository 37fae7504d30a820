package cloudcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/config"
)

// writeConfig writes a config file for driver with its state in a temp
// dir, and returns its path and the loaded config.
func writeConfig(t *testing.T, driver, extra string) (string, *config.Config) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("[dispatcher]\nstate_dir = %q\n\n[cloud]\ndriver = %q\nrunner_path = %q\n%s",
		filepath.Join(dir, "state"), driver, filepath.Join(dir, "runner"), extra)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

func TestMainExitStatus(t *testing.T) {
	ctPath, _ := writeConfig(t, "fake", "")
	slowPath, slowCfg := writeConfig(t, "local", "\n[cloud.local]\nboot_delay = \"1h\"\n")
	for _, tc := range []struct {
		name       string
		config     string
		opts       Options
		want       int
		stdout     string // regexp
		stderr     string // substring
		noInstance bool   // nothing left in slowCfg's local dir
	}{
		{name: "zero timeout", config: ctPath, want: ExitUsage, stderr: Usage},
		{name: "unknown type", config: ctPath, opts: Options{Type: "huge", Timeout: DefaultTimeout}, want: ExitUsage, stderr: `unknown instance type "huge"`},
		{name: "missing config", config: filepath.Join(t.TempDir(), "none.toml"), opts: Options{Timeout: DefaultTimeout}, want: ExitFailed, stderr: "none.toml"},
		{name: "every step holds", config: ctPath, opts: Options{Timeout: DefaultTimeout}, want: ExitOK, stdout: `(?m)^destroy +ok .*\ncloudtest: ok, every step held`},
		{name: "a step fails", config: slowPath, opts: Options{Timeout: time.Second}, want: ExitFailed,
			stdout: `(?m)^ssh +FAIL .*--timeout 1s.*\ncleanup +ok .*nothing left\ncloudtest: FAILED at step "ssh"`, noInstance: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := Exec(context.Background(), tc.config, tc.opts, &stdout, &stderr)
			if got != tc.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.want, &stdout, &stderr)
			}
			if tc.stdout != "" && !regexp.MustCompile(tc.stdout).MatchString(stdout.String()) {
				t.Errorf("stdout does not match %q:\n%s", tc.stdout, &stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, &stderr)
			}
			if tc.noInstance {
				if left := localLeft(t, slowCfg); len(left) != 0 {
					t.Errorf("local instances left: %v", left)
				}
			}
		})
	}
}
