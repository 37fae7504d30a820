package e2e

// What TestAttachedConsoleCost reads of its processes from /proc: RSS
// sampled in the background by phase (its peaks), CPU time, and the pids
// of the daemon and of the consoles under tmux.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssSampler reads the RSS of the processes it is given every few
// seconds, keeping each one's peak and the load's range per phase. Its
// fields are its own, behind mu; stop ends its goroutine.
type rssSampler struct {
	mu     sync.Mutex
	procs  map[string]int // name → pid
	phase  string
	phases []string                      // in the order begun
	began  map[string]time.Time          // phase → when it began
	peak   map[string]map[string]rssPeak // phase → name → peak VmRSS
	load   map[string][2]float64         // phase → lowest, highest load
	cpu    map[string]map[string]*cpuSpan
	stopc  chan struct{}
	done   chan struct{}
}

func newRSSSampler(every time.Duration) *rssSampler {
	s := &rssSampler{procs: map[string]int{}, peak: map[string]map[string]rssPeak{},
		load: map[string][2]float64{}, began: map[string]time.Time{}, cpu: map[string]map[string]*cpuSpan{}, stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and waits for it; it may be called again.
func (s *rssSampler) stop() {
	s.mu.Lock()
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	s.mu.Unlock()
	<-s.done
}

// watch adds a process to sample under name.
func (s *rssSampler) watch(name string, pid int) {
	s.mu.Lock()
	s.procs[name] = pid
	s.mu.Unlock()
	s.sample()
}

// begin starts a phase: the samples from now on count towards it.
func (s *rssSampler) begin(phase string) {
	s.mu.Lock()
	s.phase = phase
	s.phases = append(s.phases, phase)
	s.began[phase] = time.Now()
	s.mu.Unlock()
	s.sample()
}

// rssPeak is a process's highest VmRSS in a phase, and its anonymous and
// file-backed parts at that sample, in kB: which of the two made a peak
// (the heap, or the store's file through bbolt's mapping).
type rssPeak struct{ rss, anon, file int }

// cpuSpan is a process's CPU time at its first and last sample of a
// phase, and when they were taken.
type cpuSpan struct {
	first, last   time.Duration
	firstT, lastT time.Time
}

// since is how long ago phase began.
func (s *rssSampler) since(phase string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.began[phase]).Round(time.Second)
}

func (s *rssSampler) sample() {
	l, _ := strconv.ParseFloat(loadAvg(), 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase == "" {
		return
	}
	lr, ok := s.load[s.phase]
	if !ok {
		lr = [2]float64{l, l}
	}
	s.load[s.phase] = [2]float64{min(lr[0], l), max(lr[1], l)}
	for name, pid := range s.procs {
		kb, err := statusKB(pid, "VmRSS")
		cpu, cerr := procCPU(pid)
		if err != nil || cerr != nil {
			continue // exited: its last peak stands
		}
		if s.peak[s.phase] == nil {
			s.peak[s.phase], s.cpu[s.phase] = map[string]rssPeak{}, map[string]*cpuSpan{}
		}
		if kb > s.peak[s.phase][name].rss {
			anon, _ := statusKB(pid, "RssAnon")
			file, _ := statusKB(pid, "RssFile")
			s.peak[s.phase][name] = rssPeak{kb, anon, file}
		}
		now := time.Now()
		if sp := s.cpu[s.phase][name]; sp != nil {
			sp.last, sp.lastT = cpu, now
		} else {
			s.cpu[s.phase][name] = &cpuSpan{cpu, cpu, now, now}
		}
	}
}

// report is one line a phase: each process's peak RSS, its CPU (in
// cores, between its first and last sample of the phase) and the load.
func (s *rssSampler) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, ph := range s.phases {
		fmt.Fprintf(&b, "  %-34s load %4.1f–%4.1f; peak RSS", ph, s.load[ph][0], s.load[ph][1])
		names := make([]string, 0, len(s.peak[ph]))
		for n := range s.peak[ph] {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			p := s.peak[ph][n]
			fmt.Fprintf(&b, " %s %d MiB (anon %d, file %d)", n, p.rss/1024, p.anon/1024, p.file/1024)
		}
		b.WriteString("; CPU")
		for _, n := range names {
			if sp := s.cpu[ph][n]; sp.lastT.After(sp.firstT) {
				fmt.Fprintf(&b, " %s %.2f", n, (sp.last-sp.first).Seconds()/sp.lastT.Sub(sp.firstT).Seconds())
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// childOf returns the pid of a process named name below parent (a child,
// or a child's child: tmux runs the pane's command through a shell).
func childOf(t *testing.T, parent int, name string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		ppid int
		comm string
	}
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(st)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		f := strings.Fields(s[end+1:])
		if open < 0 || end < open || len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = proc{ppid, s[open+1 : end]}
	}
	for pid, p := range procs {
		if p.comm != name {
			continue
		}
		for up, depth := p.ppid, 0; up > 1 && depth < 4; up, depth = procs[up].ppid, depth+1 {
			if up == parent {
				return pid
			}
		}
	}
	t.Fatalf("no process %s under %d", name, parent)
	return 0
}

// paneProcess is the pid of the binary running in tm's pane.
func paneProcess(t *testing.T, tm *term) int {
	t.Helper()
	pane, err := tm.tmux("display-message", "-p", "-t", tm.name, "#{pane_pid}")
	if err != nil {
		t.Fatalf("tmux display-message: %v: %s", err, pane)
	}
	ppid, err := strconv.Atoi(strings.TrimSpace(pane))
	if err != nil {
		t.Fatalf("pane pid %q: %v", pane, err)
	}
	return childOf(t, ppid, "dispatch-tui")
}

// cpuTime is the user and system CPU pid has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := procCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// procCPU is the user and system CPU pid has used, from /proc.
func procCPU(pid int) (time.Duration, error) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(st)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name, want 13 or more", pid, len(f))
	}
	// After the comm: state(0) ppid … utime(11) stime(12), in clock ticks
	// (100 a second on Linux).
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return time.Duration(u+k) * 10 * time.Millisecond, nil
}

// statusKB is one kB line of pid's /proc status (VmRSS, VmHWM, RssAnon…).
func statusKB(pid int, key string) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if f := strings.Fields(v); ok && k == key && len(f) == 2 && f[1] == "kB" {
			return strconv.Atoi(f[0])
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, key)
}

// memLine says pid's RSS now (its anonymous and file parts) and its peak,
// in MiB.
func memLine(t *testing.T, pid int) string {
	t.Helper()
	var v [4]int
	for i, k := range []string{"VmRSS", "RssAnon", "RssFile", "VmHWM"} {
		kb, err := statusKB(pid, k)
		if err != nil {
			t.Fatal(err)
		}
		v[i] = kb / 1024
	}
	return fmt.Sprintf("RSS %d MiB (anonymous %d, file %d), peak %d MiB", v[0], v[1], v[2], v[3])
}
