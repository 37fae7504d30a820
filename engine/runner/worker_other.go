//go:build !unix

package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"
)

// WorkerEnv is what Main needs from its surroundings (see worker.go).
type WorkerEnv struct {
	StateDir  string
	Version   string
	Hash      string
	Now       func() time.Time
	KillGrace time.Duration
	Self      string
	SelfArgs  []string
}

// ExecutableHash returns the sha256 (hex) of the running executable.
func ExecutableHash() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Main reports that the worker side of the runner needs a Unix system.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, env WorkerEnv) int {
	fmt.Fprintln(stderr, "runner: the worker side of the runner protocol needs a Unix system")
	return 1
}

// KillAll is only implemented on Unix.
func KillAll(stateDir string) {}
