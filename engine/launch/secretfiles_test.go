package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/config"
)

// giveTo chowns path to uid, skipping the test when that needs root it
// does not have (failing on CI).
func giveTo(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Chown(path, uid, -1); err != nil {
		if os.Geteuid() != 0 && os.Getenv("CI") != "true" {
			t.Skipf("needs root to give a file to another user: %v", err)
		}
		t.Fatal(err)
	}
}

// TestKeysOfAnotherUserAreRefused: a TLS key or an EC2 client key that
// another user owns (who could swap it for their own) is refused with the
// chown that fixes it; this user's or root's is taken.
func TestKeysOfAnotherUserAreRefused(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := selfSign("127.0.0.1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	want := func(what string, err error, refused bool) {
		t.Helper()
		switch {
		case !refused && err != nil:
			t.Fatalf("%s: %v", what, err)
		case refused && (err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") || !strings.Contains(err.Error(), "run chown ")):
			t.Fatalf("%s: %v, want a refusal naming the owner and the chown", what, err)
		}
	}

	_, err = loadCertificate(certFile, keyFile, dir, "127.0.0.1")
	want("tls_key of this user", err, false)
	giveTo(t, keyFile, 0)
	_, err = loadCertificate(certFile, keyFile, dir, "127.0.0.1")
	want("tls_key of root", err, false)
	giveTo(t, keyFile, 65534)
	_, err = loadCertificate(certFile, keyFile, dir, "127.0.0.1")
	want("tls_key of another user", err, true)

	// The self-signed pair in the state dir.
	state := t.TempDir()
	if _, err := loadCertificate("", "", state, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	giveTo(t, filepath.Join(state, selfSignedKey), 65534)
	_, err = loadCertificate("", "", state, "127.0.0.1")
	want("self-signed key of another user", err, true)

	// The client key of the drivers that create instances (cloud.ssh_key_file).
	cfg := config.Default()
	cfg.Dispatcher.StateDir = t.TempDir()
	cfg.Cloud.SSHKeyFile = filepath.Join(t.TempDir(), "client_key")
	if err := writeNewKey(cfg.Cloud.SSHKeyFile, "ec2"); err != nil {
		t.Fatal(err)
	}
	_, err = clientKey(cfg, "ec2")
	want("ssh_key_file of this user", err, false)
	giveTo(t, cfg.Cloud.SSHKeyFile, 65534)
	_, err = clientKey(cfg, "ec2")
	want("ssh_key_file of another user", err, true)
}
