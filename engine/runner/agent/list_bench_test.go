//go:build linux

package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// BenchmarkListVerb is "runner list" of 256 containers, a third of them
// running (their pid records name this process), the rest exited: the
// runner's side of every probe, without the serve round trip.
//
//	go test -run='^$' -bench=ListVerb ./engine/runner/agent
func BenchmarkListVerb(b *testing.B) {
	root := b.TempDir()
	self := os.Getpid()
	at := time.Date(2026, 11, 25, 18, 0, 0, 123456789, time.UTC)
	running := pidRecord{pid: self, start: procStart(self), started: at, spid: self, sstart: procStart(self)}
	for i := range 256 {
		dir := filepath.Join(root, fmt.Sprintf("w1-ctr-%06d", i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		rec := formatPIDRecord(running)
		if i%3 != 0 {
			rec = append(rec, formatExitLine(0, at.Add(time.Second), "")...)
		}
		for _, f := range []struct {
			name string
			data []byte
		}{{filePIDStart, rec}, {fileStdout, nil}, {fileStderr, nil}} {
			if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	env := Env{StateDir: root, Version: "0.1.0-test", Hash: "abc123"}
	var out, errb bytes.Buffer
	cpu := func() int64 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	b.ResetTimer()
	cpu0 := cpu()
	for b.Loop() {
		out.Reset()
		if code := Main([]string{"list"}, strings.NewReader(""), &out, &errb, env); code != 0 {
			b.Fatalf("list: %d %s", code, errb.String())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu()-cpu0)/float64(b.N), "cpu-ns/op")
	sts, err := runner.ParseList(out.Bytes())
	if err != nil || len(sts) != 256 {
		b.Fatal(len(sts), err)
	}
}
