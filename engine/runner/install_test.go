package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestInstallLineConcurrent runs the install line in a real shell from many
// deployers at once into one path, as instances sharing a file system do, and
// has each run the runner it just installed. With a shared temporary name this
// failed with "Text file busy" or a chmod of a file already renamed.
func TestInstallLineConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dispatch-tui-runner~abc")
	const deployers = 8
	const rounds = 5
	// A large body makes the write slow enough for installs to overlap.
	padding := "#" + strings.Repeat("x", 1<<20) + "\n"
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, deployers)
		for i := 0; i < deployers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				body := fmt.Sprintf("#!/bin/sh\n%secho deployer-%d\n", padding, i)
				install := exec.Command("/bin/sh", "-c", InstallLine(path, int64(len(body))))
				install.Stdin = strings.NewReader(body)
				if out, err := install.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("deployer %d install: %v: %s", i, err, out)
					return
				}
				out, err := exec.Command(path).CombinedOutput()
				if err != nil {
					errs <- fmt.Errorf("deployer %d run: %v: %s", i, err, out)
					return
				}
				if !bytes.HasPrefix(out, []byte("deployer-")) {
					errs <- fmt.Errorf("deployer %d run: output %q", i, out)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(path) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only the runner", names)
	}
}

// TestInstallLineFailure: an install that cannot write exits non-zero and
// leaves nothing behind.
func TestInstallLineFailure(t *testing.T) {
	dir := t.TempDir()
	install := exec.Command("/bin/sh", "-c", InstallLine(filepath.Join(dir, "missing", "runner"), 10))
	install.Stdin = strings.NewReader("#!/bin/sh\n")
	if err := install.Run(); err == nil {
		t.Fatal("install into a missing directory succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("directory holds %d entries after a failed install, want none", len(entries))
	}
}

// TestInstallLineCutShort: an install whose input ends early without an
// error (a channel closed by a deadline OpenSSH would not signal) exits
// non-zero and leaves no runner, not part of one; the runner already in
// place stays as it was. The whole binary still installs.
func TestInstallLineCutShort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runner")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho old\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "#!/bin/sh\n#" + strings.Repeat("x", 4096) + "\necho new\n"
	install := exec.Command("/bin/sh", "-c", InstallLine(path, int64(len(body))))
	install.Stdin = strings.NewReader(body[:len(body)/2])
	if out, err := install.CombinedOutput(); err == nil {
		t.Fatalf("an install of half the binary succeeded: %s", out)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "#!/bin/sh\necho old\n" {
		t.Fatalf("after a cut install the runner holds %d bytes (%v), want the old one", len(got), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries after a cut install, want the runner alone", len(entries))
	}
	install = exec.Command("/bin/sh", "-c", InstallLine(path, int64(len(body))))
	install.Stdin = strings.NewReader(body)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("the whole binary: %v: %s", err, out)
	}
	if out, err := exec.Command(path).Output(); err != nil || string(out) != "new\n" {
		t.Fatalf("the runner installed whole says %q, %v; want new", out, err)
	}
}

func TestInstallPath(t *testing.T) {
	for _, tc := range []struct {
		line string
		path string
		ok   bool
	}{
		{InstallLine("/var/lib/dispatch-tui/runner~ab12", 78501839), "/var/lib/dispatch-tui/runner~ab12", true},
		{InstallLine("runner", 0), "runner", true},
		{"true", "", false},
		{"cat > '/x.tmp' && mv -f '/x.tmp' '/x'", "/x", false},
		{"'/x' runner version", "/x", false},
	} {
		path, ok := InstallPath(tc.line)
		if ok != tc.ok || (ok && path != tc.path) {
			t.Errorf("InstallPath(%q) = %q, %v; want %q, %v", tc.line, path, ok, tc.path, tc.ok)
		}
	}
}
