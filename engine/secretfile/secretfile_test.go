package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// asRoot skips a test that needs to chown files when not root, except on
// CI, where it fails.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root to give a file to another user")
		}
		t.Skip("needs root to give a file to another user")
	}
}

func TestCheck(t *testing.T) {
	asRoot(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		uid     int
		mode    os.FileMode
		wantErr string
	}{
		{"own, 0600", os.Geteuid(), 0o600, ""},
		{"root, 0400", 0, 0o400, ""},
		{"another user's, 0600", 65534, 0o600, "belongs to uid 65534, not to this user"},
		{"own, 0640", os.Geteuid(), 0o640, "run chmod 600 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, []byte("s"), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, tc.uid, -1); err != nil {
				t.Fatal(err)
			}
			err := Stat(p)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Stat: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Stat = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	// The fix the error names works.
	p := filepath.Join(dir, "another_user's,_0600")
	if err := Stat(p); err == nil || !strings.Contains(err.Error(), "run chown ") {
		t.Fatalf("Stat = %v, want the chown that fixes it", err)
	}
	if err := os.Chown(p, os.Geteuid(), -1); err != nil {
		t.Fatal(err)
	}
	if err := Stat(p); err != nil {
		t.Fatalf("after the chown: %v", err)
	}
}
