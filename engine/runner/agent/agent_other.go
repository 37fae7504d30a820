// The runner where it cannot run: systems without unix process control.

//go:build !unix

package agent

import (
	"fmt"
	"io"
	"time"
)

// Env is what Main needs from its surroundings (see agent.go).
type Env struct {
	StateDir  string
	Version   string
	Hash      string
	Now       func() time.Time
	KillGrace time.Duration
	Self      string
	SelfArgs  []string
}

// Main reports that the runner agent needs a Unix system.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, env Env) int {
	fmt.Fprintln(stderr, "runner: the runner agent needs a Unix system")
	return 1
}

// KillAll is only implemented on Unix.
func KillAll(stateDir string) {}
