// Tests of BuildBinary's use of a binary make test already built.

package enginetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With $DISPATCH_TUI_TEST_BINARY set, BuildBinary returns that file and
// builds nothing into dir; a path that is not an executable file is an
// error that says how to do without it.
func TestBuildBinaryTakesTheSharedOne(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "prebuilt")
	if err := os.WriteFile(shared, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Setenv(BinaryEnv, shared)
	dir := t.TempDir()
	got, err := BuildBinary(dir)
	if err != nil || got != shared {
		t.Fatalf("BuildBinary = %q, %v; want the shared %q", got, err, shared)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("BuildBinary built into %s though %s names a binary: %v", dir, BinaryEnv, ents)
	}

	for _, bad := range []string{plain, filepath.Join(dir, "missing"), dir} {
		t.Setenv(BinaryEnv, bad)
		if got, err := BuildBinary(t.TempDir()); err == nil || !strings.Contains(err.Error(), "unset it") {
			t.Errorf("%s=%s: BuildBinary = %q, %v; want an error saying to unset it", BinaryEnv, bad, got, err)
		}
	}
}
