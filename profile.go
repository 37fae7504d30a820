// Debug profiles of a daemon (the hidden --profile DIR flag): CPU profiles
// cut at every SIGUSR1, and heap profiles there and at exit.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
)

// startProfiles profiles the daemon into dir until the returned stop is
// called or ctx ends: the CPU into cpu-0.pprof, and at the Nth SIGUSR1 the
// heap into heap-N.pprof and the CPU from then on into cpu-N.pprof, so
// that a window (two signals) has a profile of its own; stop writes
// heap-exit.pprof. A profile that cannot be written is logged, never
// fatal: profiling is a measurement aid, not the daemon's job.
func startProfiles(ctx context.Context, log *slog.Logger, dir string) (stop func()) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Error("profiles: make the directory; profiling is off", "dir", dir, "err", err.Error())
		return func() {}
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		cpu := startCPUProfile(log, filepath.Join(dir, "cpu-0.pprof"))
		defer func() { cpu() }()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-quit:
				return
			case <-usr1:
				cpu()
				writeHeapProfile(log, filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", n)))
				cpu = startCPUProfile(log, filepath.Join(dir, fmt.Sprintf("cpu-%d.pprof", n)))
			}
		}
	}()
	log.Info("profiles: CPU and heap profiles, cut at every SIGUSR1", "dir", dir)
	return func() {
		signal.Stop(usr1)
		close(quit)
		<-done
		writeHeapProfile(log, filepath.Join(dir, "heap-exit.pprof"))
	}
}

// startCPUProfile starts a CPU profile into path and returns what ends it.
func startCPUProfile(log *slog.Logger, path string) (stop func()) {
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		log.Error("profiles: start a CPU profile; it is off", "path", path, "err", err.Error())
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Error("profiles: write a CPU profile", "path", path, "err", err.Error())
		}
	}
}

// writeHeapProfile writes the heap profile (as of the last collection) to
// path.
func writeHeapProfile(log *slog.Logger, path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		log.Error("profiles: write a heap profile", "path", path, "err", err.Error())
		return
	}
	log.Info("profiles: heap profile written", "path", path)
}
