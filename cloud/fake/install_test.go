package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"weak"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// cpuTime is the CPU time (user and system) the test process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A daemon installs one copy of its runner on every instance: on the
// in-memory cloud, installing it on hundreds of instances hashes it once,
// not once an instance (at 6,000 instances booting, ~80 MB hashed each
// time with the driver locked held every other call for minutes).
func TestInstallsOfOneBinaryHashItOnce(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{})
	bin := make([]byte, 16<<20)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	c0 := cpuTime(t)
	sum := sha256.Sum256(bin)
	one := cpuTime(t) - c0
	const n = 100
	path := "/tmp/dispatch-tui-runner~test"
	exs := make([]runner.Executor, n)
	for i := range exs {
		exs[i] = mustExec(t, d, mustCreate(t, d, small, nil))
	}
	c0 = cpuTime(t)
	for _, ex := range exs {
		if _, _, err := ex.Execute(ctx, runner.InstallLine(path, int64(len(bin))), bin); err != nil {
			t.Fatal(err)
		}
	}
	all := cpuTime(t) - c0
	if all > 10*max(one, time.Millisecond) {
		t.Fatalf("%d installs of one %d MiB binary took %s of CPU, one hash of it %s: hashed once an install?", n, len(bin)>>20, all, one)
	}
	want := "fake-runner " + hex.EncodeToString(sum[:])
	for _, ex := range []runner.Executor{exs[0], exs[n-1]} {
		if v, err := (&runner.Client{Exec: ex, Path: path}).Version(ctx); err != nil || v != want {
			t.Fatalf("installed version %q, %v; want %q", v, err, want)
		}
	}
	// Another binary is hashed for itself.
	other := []byte("another binary")
	if _, _, err := exs[1].Execute(ctx, runner.InstallLine(path, int64(len(other))), other); err != nil {
		t.Fatal(err)
	}
	osum := sha256.Sum256(other)
	if v, _ := (&runner.Client{Exec: exs[1], Path: path}).Version(ctx); v != "fake-runner "+hex.EncodeToString(osum[:]) {
		t.Fatalf("a second binary installed: version %q", v)
	}
}

// The driver keeps no installed binary alive: a daemon's copy of its
// runner (~80 MB) is freed once its installs are done.
func TestInstalledBinaryIsNotKept(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{})
	ex := mustExec(t, d, mustCreate(t, d, small, nil))
	bin := make([]byte, 1<<20)
	if _, _, err := ex.Execute(ctx, runner.InstallLine("/tmp/dispatch-tui-runner~test", int64(len(bin))), bin); err != nil {
		t.Fatal(err)
	}
	freed := weak.Make(&bin[0])
	bin = nil
	wait.Until(t, "the installed binary to be collected", 20*time.Second, func() bool {
		runtime.GC()
		return freed.Value() == nil
	})
	runtime.KeepAlive(d) // the driver lives on, as a daemon's does
}

// A call whose context ends while it waits for the driver is not run, as
// an SSH session cancelled before it opens sends nothing: a probe the
// pool gave up on (its deadline passed in the queue) must not still
// install a runner and hold the driver.
func TestCallCancelledWhileWaitingIsNotRun(t *testing.T) {
	d, _ := newDriver(t, Options{})
	ex := mustExec(t, d, mustCreate(t, d, small, nil))
	path := "/tmp/dispatch-tui-runner~test"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.mu.Lock()
	done := make(chan error, 1)
	go func() {
		_, _, err := ex.Execute(ctx, runner.InstallLine(path, 6), []byte("binary"))
		done <- err
	}()
	// The call is waiting once a goroutine is in Execute, in Mutex.Lock.
	wait.Until(t, "the install waiting for the driver", 20*time.Second, func() bool {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "fake.(*executor).Execute") && strings.Contains(g, "sync.(*Mutex).Lock") {
				return true
			}
		}
		return false
	})
	cancel()
	d.mu.Unlock()
	var err error
	wait.Until(t, "the install to return", 20*time.Second, func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, runner.ErrNotSent) {
		t.Fatalf("an install cancelled while waiting: %v; want a not-sent context.Canceled", err)
	}
	if n := d.Stats().Installs; n != 0 {
		t.Fatalf("an install cancelled while waiting was run (%d installs)", n)
	}
}
