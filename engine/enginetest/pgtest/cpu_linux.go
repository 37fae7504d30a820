// The CPU the server has spent, for benchmarks on a shared machine, where
// CPU time says more than wall time.

package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPU returns the CPU time the server's processes have used so far: the
// postmaster's own, that of its children that ended (every backend of a
// closed connection), and that of those still running.
func (s *Server) CPU() (time.Duration, error) {
	pidLine, err := os.ReadFile(filepath.Join(s.data, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("pgtest: the server's pid: %w", err)
	}
	pid := strings.SplitN(string(pidLine), "\n", 2)[0]
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	// utime, stime, cutime, cstime: fields 14-17, here 11-14 after the
	// command's closing parenthesis.
	total := sumFields(f[11:15])
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		child := filepath.Base(filepath.Dir(p))
		cf, err := procStat(child)
		if err != nil || len(cf) < 13 || cf[1] != pid {
			continue // gone meanwhile, or not the server's
		}
		total += sumFields(cf[11:13])
	}
	return total, nil
}

// procStat returns the fields of /proc/pid/stat after the command name
// (which may hold spaces): state, ppid, ….
func procStat(pid string) ([]string, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("pgtest: /proc/%s/stat: no command name", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

func sumFields(fs []string) time.Duration {
	var d time.Duration
	for _, f := range fs {
		n, _ := strconv.ParseInt(f, 10, 64)
		d += time.Duration(n) * clockTick
	}
	return d
}

// Meter measures the CPU the test process and the server use from
// NewMeter to Report.
type Meter struct {
	s              *Server
	self0, server0 time.Duration
}

// NewMeter starts measuring.
func (s *Server) NewMeter(b *testing.B) *Meter {
	b.Helper()
	m := &Meter{s: s, self0: selfCPU()}
	var err error
	if m.server0, err = s.CPU(); err != nil {
		b.Fatal(err)
	}
	return m
}

// Report reports, per iteration of b, the CPU seconds the test process
// (client-cpu-s/op) and the server (server-cpu-s/op) used since NewMeter.
func (m *Meter) Report(b *testing.B) {
	b.Helper()
	server, err := m.s.CPU()
	if err != nil {
		b.Fatal(err)
	}
	n := float64(max(b.N, 1))
	b.ReportMetric((selfCPU()-m.self0).Seconds()/n, "client-cpu-s/op")
	b.ReportMetric((server-m.server0).Seconds()/n, "server-cpu-s/op")
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
