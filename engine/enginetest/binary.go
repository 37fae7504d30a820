// Building the dispatch-tui binary for tests that run it.

package enginetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildBinary builds the dispatch-tui executable into dir, static as make
// build makes it (the runner then starts without the dynamic loader and
// runs whatever the instance's libc), and returns its path. The go tool's
// output goes to stderr.
func BuildBinary(dir string) (string, error) {
	bin := filepath.Join(dir, "dispatch-tui")
	build := exec.Command("go", "build", "-o", bin, "dispatch-tui")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build dispatch-tui: %w", err)
	}
	return bin, nil
}
