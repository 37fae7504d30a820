package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dispatch-tui/engine/config"
)

// TestSocketPathTooLongSaysWhatToDo: a state dir whose socket path is
// over the kernel's limit is refused with the length and what to change,
// not the bind's bare "invalid argument", and nothing is left behind.
func TestSocketPathTooLongSaysWhatToDo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("s", 110))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := listenSocket(&config.Dispatcher{StateDir: dir})
	if err == nil {
		ln.Close()
		t.Fatal("listened on a socket path over 107 bytes")
	}
	for _, want := range []string{"a Unix socket's path may have at most 107", "choose a shorter dispatcher.state_dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %d files in the state dir", len(ents))
	}
}
