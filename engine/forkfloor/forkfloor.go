// Package forkfloor measures the most containers a machine could run at
// all: parallel spawners doing nothing but fork+exec+wait of a command
// (/usr/bin/true), the way the runner's supervisor starts one (its own
// session, stdio on /dev/null). End-to-end throughput on a shared machine
// is only comparable as a ratio to this floor measured in the same run
// (docs/design.md §9).
package forkfloor

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// DefaultCommand is what the floor spawns: the command of the benchmark's
// containers.
const DefaultCommand = "/usr/bin/true"

// Result is one measurement.
type Result struct {
	Spawns   int           // commands started and reaped
	Spawners int           // how many ran in parallel
	Elapsed  time.Duration // from the first start to the last reap
}

// Rate is spawns per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Spawns) / r.Elapsed.Seconds()
}

func (r Result) String() string {
	return fmt.Sprintf("%d spawns by %d spawners in %s: %.0f/s", r.Spawns, r.Spawners, r.Elapsed.Round(time.Millisecond), r.Rate())
}

// Measure runs spawners goroutines, each starting path and waiting for it
// to exit, one after another, for about d (or until ctx is done). A
// command that cannot be started, or exits other than 0, is an error: the
// floor of a command that fails is not the floor of `true`.
func Measure(ctx context.Context, path string, spawners int, d time.Duration) (Result, error) {
	if spawners < 1 {
		return Result{}, fmt.Errorf("fork floor: spawners must be at least 1, got %d", spawners)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return Result{}, fmt.Errorf("fork floor: %w", err)
	}
	defer devnull.Close()
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{"PATH=/usr/bin:/bin"},
		Files: []uintptr{devnull.Fd(), devnull.Fd(), devnull.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}
	argv := []string{path}

	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	counts := make([]int, spawners)
	errs := make([]error, spawners)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range spawners {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := spawn(path, argv, attr); err != nil {
					errs[i] = err
					cancel()
					return
				}
				counts[i]++
			}
		})
	}
	wg.Wait()
	r := Result{Spawners: spawners, Elapsed: time.Since(start)}
	for i := range spawners {
		if errs[i] != nil {
			return r, fmt.Errorf("fork floor: %w", errs[i])
		}
		r.Spawns += counts[i]
	}
	return r, nil
}

// spawn starts path and reaps it.
func spawn(path string, argv []string, attr *syscall.ProcAttr) error {
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return fmt.Errorf("start %s: %w", path, err)
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for %s (pid %d): %w", path, pid, err)
		}
		break
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("%s (pid %d) ended with status %#x, want exit 0", path, pid, uint32(ws))
	}
	return nil
}
