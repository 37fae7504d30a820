package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/store/pgstore"
)

// The built daemon given a wrong password for its PostgreSQL store says
// so plainly, without the password, and exits 1 having started nothing.
// The refusal is a real server's (scram-sha-256 for that role).
func TestDaemonWrongStorePassword(t *testing.T) {
	url := pgtest.NewDatabase(t)
	srv := pgtest.Start(t)
	db := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	state := filepath.Join(dir, "state")
	conf := "[dispatcher]\nstate_dir = \"" + state + "\"\n[cloud]\ndriver = \"fake\"\n[store]\nurl_file = \"" + filepath.Join(dir, "url") + "\"\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "url"), []byte(srv.PasswordURL(t, db, "wrong-sekrit")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	daemon := exec.CommandContext(ctx, bin, "--daemon", "--config", cfg)
	daemon.Env = append(os.Environ(), "DISPATCH_TUI_STORE_URL=")
	daemon.Stderr = &stderr
	err = daemon.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("daemon with a wrong password: %v; want exit 1\n%s", err, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, "refused the credentials: check the user and password in [store] url") || strings.Contains(msg, "wrong-sekrit") {
		t.Fatalf("daemon with a wrong password said:\n%s\nwant the credentials refusal, without the password", msg)
	}
	if _, err := os.Stat(filepath.Join(state, "dispatch-tui.db")); err == nil {
		t.Fatal("a refused start left an embedded store behind")
	}
	// The same role with its password gets in: the refusal was the password's.
	st, err := pgstore.Open(pgstore.Options{URL: srv.PasswordURL(t, db, "right-password"), Timeout: time.Minute})
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	st.Close()
}
