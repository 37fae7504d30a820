//go:build linux

package agent

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"dispatch-tui/engine/runner"
)

// TestSpecLimitsMatchTheKernel execs a real program with what the shared
// validator accepts at its limits, the way the runner would (commandLine),
// and checks that one byte more is what the kernel refuses: the limits the
// dispatcher enforces at submit are the kernel's, not guesses.
func TestSpecLimitsMatchTheKernel(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1)")
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &rl); err != nil || rl.Cur < 8<<20 {
		t.Skipf("stack limit %d below 8 MiB: the kernel allows less than MaxArgEnvBytes", rl.Cur)
	}
	run := func(spec runner.Spec, docker string) error {
		argv, env := commandLine(spec, docker, os.Getenv("HOME"))
		path := truePath
		if docker == "" {
			argv[0] = truePath
		}
		return (&exec.Cmd{Path: path, Args: argv, Env: env}).Run()
	}
	arg := strings.Repeat("a", runner.MaxArgBytes)
	// Right at the total limit: only many short arguments get there within
	// the spec's 1 MiB of JSON (each costs the kernel a pointer too).
	full := runner.Spec{ID: "c1", Command: []string{"true"}}
	used := len("true") + 1 + 8
	for used+2*(1+1+8) <= runner.MaxArgEnvBytes {
		full.Command = append(full.Command, "1")
		used += 1 + 1 + 8
	}
	full.Command = append(full.Command, strings.Repeat("c", runner.MaxArgEnvBytes-used-1-8))
	cases := []struct {
		name   string
		spec   runner.Spec
		docker bool
	}{
		{"longest argument", runner.Spec{ID: "c1", Command: []string{"true", arg}}, false},
		{"longest variable", runner.Spec{ID: "c1", Command: []string{"true"}, Env: map[string]string{"A": arg[:runner.MaxArgBytes-2]}}, false},
		{"longest variable for docker", runner.Spec{ID: "c1", Command: []string{"true"}, Image: "debian",
			Env: map[string]string{"A": arg[:runner.MaxArgBytes-2-len("--env=")]}}, true},
		{"argv and env at the total limit", full, false},
	}
	for _, tc := range cases {
		if err := runner.ValidateSpec(&tc.spec); err != nil {
			t.Fatalf("%s: validator refused: %v", tc.name, err)
		}
		docker := ""
		if tc.docker {
			docker = truePath // stands in for docker: takes the same argv
		}
		if err := run(tc.spec, docker); err != nil {
			t.Fatalf("%s: validator accepted, exec failed: %v", tc.name, err)
		}
	}
	// One byte more than the validator takes in one string is one the
	// kernel refuses too.
	over := runner.Spec{ID: "c1", Command: []string{"true", arg + "a"}}
	if runner.ValidateSpec(&over) == nil {
		t.Fatal("validator accepted an argument over MAX_ARG_STRLEN")
	}
	if err := run(over, ""); !errors.Is(err, syscall.E2BIG) {
		t.Fatalf("exec of an argument of MaxArgBytes+1: %v, want E2BIG", err)
	}
	full.Command[len(full.Command)-1] += "c"
	if err := runner.ValidateSpec(&full); err == nil || !strings.Contains(err.Error(), "ARG_MAX") {
		t.Fatalf("one byte over MaxArgEnvBytes: %v, want an ARG_MAX error", err)
	}
}
