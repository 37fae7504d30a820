// Building (or finding) the dispatch-tui binary for tests that run it.

package enginetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BinaryEnv names a dispatch-tui binary already built for this source
// tree (make test builds one and sets it), so that the packages that run
// the binary share it instead of each linking its own: a static link
// costs a loaded two-core machine minutes per package.
const BinaryEnv = "DISPATCH_TUI_TEST_BINARY"

// BuildBinary returns the path of a dispatch-tui executable: the one
// $DISPATCH_TUI_TEST_BINARY names, or else one it builds into dir, static
// as make build makes it (the runner then starts without the dynamic
// loader and runs whatever the instance's libc). The go tool's output goes
// to stderr. Callers only read and run the file: it may be shared.
func BuildBinary(dir string) (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		st, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("$%s: %w (unset it to build the binary for this test)", BinaryEnv, err)
		}
		if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("$%s=%s is not an executable file (unset it to build the binary for this test)", BinaryEnv, bin)
		}
		return filepath.Abs(bin)
	}
	bin := filepath.Join(dir, "dispatch-tui")
	build := exec.Command("go", "build", "-o", bin, "dispatch-tui")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build dispatch-tui: %w", err)
	}
	return bin, nil
}
