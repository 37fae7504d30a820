package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

// TestProfilesCutAtSIGUSR1: --profile's files: the CPU profile from the
// start, at a SIGUSR1 a heap profile and the next CPU profile, and at
// stop the exit heap profile, each a non-empty file.
func TestProfilesCutAtSIGUSR1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prof")
	stop := startProfiles(context.Background(), slog.New(slog.DiscardHandler), dir)
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	heap1 := filepath.Join(dir, "heap-1.pprof")
	deadline := time.Now().Add(wait.Budget(20 * time.Second))
	for {
		if fi, err := os.Stat(filepath.Join(dir, "cpu-1.pprof")); err == nil && fi.Size() >= 0 {
			if fi, err := os.Stat(heap1); err == nil && fi.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(dir)
			t.Fatalf("no heap-1.pprof and cpu-1.pprof 20 s after SIGUSR1; the directory holds %v", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	for _, name := range []string{"cpu-0.pprof", "cpu-1.pprof", "heap-1.pprof", "heap-exit.pprof"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a profile", name, err)
		}
	}
}
