package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dispatch-tui/engine/enginetest/pgtest"
)

// TestStoreMigrate: --dry-run lists what a new database lacks and applies
// nothing; migrate applies it; then there is nothing to do. A config
// without a PostgreSQL store is told so.
func TestStoreMigrate(t *testing.T) {
	url := pgtest.NewDatabase(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[store]\nurl = \""+url+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bolt := filepath.Join(dir, "bolt.toml")
	if err := os.WriteFile(bolt, []byte("[dispatcher]\nstate_dir = \""+dir+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DISPATCH_TUI_STORE_URL", "")
	for _, step := range []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{[]string{"store", "migrate", "--dry-run", "--config", cfg}, 0, "would apply migration 1 (init)", ""},
		{[]string{"store", "migrate", "--dry-run", "--config", cfg}, 0, "would apply migration 1 (init)", ""},
		{[]string{"store", "migrate", "--config", cfg}, 0, "applied migration 1 (init)", ""},
		{[]string{"store", "migrate", "--dry-run", "--config", cfg}, 0, "the schema is up to date", ""},
		{[]string{"store", "migrate", "--config", bolt}, 1, "", "the embedded store needs no migration"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(step.args, &stdout, &stderr)
		if code != step.code || !strings.Contains(stdout.String(), step.inStdout) || !strings.Contains(stderr.String(), step.inStderr) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", step.args, code, stdout.String(), stderr.String(), step.code, step.inStdout, step.inStderr)
		}
	}
}
