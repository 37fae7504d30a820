//go:build !unix

package runner

import (
	"fmt"
	"io"
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

// Main reports that the worker side of the runner needs a Unix system.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, env WorkerEnv) int {
	fmt.Fprintln(stderr, "runner: the worker side of the runner protocol needs a Unix system")
	return 1
}

// KillAll is only implemented on Unix.
func KillAll(stateDir string) {}
