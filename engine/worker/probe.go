package worker

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"dispatch-tui/engine/runner"
)

func (p *Pool) startProbesLocked(now time.Time) {
	n := len(p.list)
	if n == 0 {
		return
	}
	start := p.probeCursor % n
	for i := 0; i < n; i++ {
		j := (start + i) % n
		w := p.list[j]
		if w.probing || w.v.State == StateShutdown || now.Before(w.nextProbe) {
			continue
		}
		if !p.probeBucket.take(now) {
			p.probeCursor = j
			return
		}
		p.startProbeLocked(w, now)
	}
}

type probeMode int

const (
	probeList  probeMode = iota // runner list
	probeBoot                   // boot probe, deploy, list
	probeAdopt                  // deploy, list (instance found in the listing)
)

func (p *Pool) startProbeLocked(w *instance, now time.Time) {
	mode := probeList
	interval := p.s.probeInterval
	switch w.v.State {
	case StateBooting:
		mode = probeBoot
		interval = p.s.bootProbeInterval
	case StateUnknown:
		mode = probeAdopt
	}
	w.probing = true
	w.nextProbe = now.Add(interval)
	if !p.goLocked(func() { p.runProbe(w, mode) }) {
		w.probing = false
	}
}

func (p *Pool) runProbe(w *instance, mode probeMode) {
	t0 := p.clk.Now()
	var (
		sts     []runner.Status
		listSeq uint64
		listAt  time.Time
		stage   string
	)
	exec, err := p.executor(w)
	if err != nil {
		stage = "connect"
	}
	client := runner.Client{Exec: exec, Path: p.s.runnerPath}
	if err == nil && mode == probeBoot && p.s.bootProbe != "" {
		stage = "boot probe"
		_, _, err = exec.Execute(p.ctx, p.s.bootProbe, nil)
	}
	if err == nil && mode != probeList {
		stage = "runner deploy"
		err = p.ensureRunner(exec, &client)
	}
	if err == nil {
		stage = "runner list"
		p.mu.Lock()
		listSeq = p.nextSeqLocked()
		listAt = p.clk.Now()
		p.mu.Unlock()
		sts, err = client.List(p.ctx)
	}
	lat := p.clk.Now().Sub(t0)

	p.mu.Lock()
	defer p.mu.Unlock()
	w.probing = false
	if w.removed || (err != nil && p.canceled()) {
		return
	}
	now := p.clk.Now()
	p.stats.Probes++
	p.stats.ProbeTime += lat
	p.stats.ProbeMaxTime = max(p.stats.ProbeMaxTime, lat)
	p.stats.ProbeLatency.observe(lat)
	w.v.LastProbe = now
	w.probed = true
	if err != nil {
		p.stats.ProbeFailures++
		msg := stage + ": " + err.Error()
		w.v.LastError = msg
		w.v.ProbeFailing = true
		if !w.probeFailing && w.v.State != StateBooting {
			p.eventLocked(now, w.v.ID, EventProbeError, "probe failed: "+msg, slog.LevelWarn)
			p.notifyLocked()
		} else {
			p.log.Debug("probe failed", "instance", string(w.v.ID), "state", string(w.v.State), "error", msg)
		}
		w.probeFailing = true
		return
	}
	changed := w.probeFailing || w.v.LastError != "" || w.v.ContainersLost != ""
	w.answeredLocked()
	w.probeFailing = false
	w.lastProbeOK = now
	w.v.LastError = ""
	w.v.ProbeFailing = false
	prev := w.v.State
	if p.applyListLocked(w, sts, listSeq, listAt, now) {
		changed = true
	}
	if prev == StateBooting || prev == StateUnknown {
		w.ready(now)
		changed = true
	}
	if changed {
		p.notifyLocked()
	}
}

// ensureRunner installs the runner if "runner version" does not report
// RunnerHash.
func (p *Pool) ensureRunner(exec runner.Executor, client *runner.Client) error {
	want := p.opts.RunnerHash
	if want == "" {
		return nil
	}
	v, err := client.Version(p.ctx)
	if err == nil && versionHash(v) == want {
		return nil
	}
	if p.canceled() {
		return p.ctx.Err()
	}
	if p.opts.RunnerBinary == nil {
		return fmt.Errorf("runner at %s reports %q, want hash %s, and no binary to install", p.s.runnerPath, v, want)
	}
	bin, err := p.acquireRunnerBinary()
	if err != nil {
		return fmt.Errorf("reading runner binary: %w", err)
	}
	_, stderr, err := exec.Execute(p.ctx, runner.InstallLine(p.s.runnerPath), bin)
	p.releaseRunnerBinary()
	if err != nil {
		return fmt.Errorf("installing runner at %s: %w (%s)", p.s.runnerPath, err, strings.TrimSpace(string(stderr)))
	}
	p.mu.Lock()
	p.stats.RunnerDeploys++
	p.mu.Unlock()
	v, err = client.Version(p.ctx)
	if err != nil {
		return err
	}
	if got := versionHash(v); got != want {
		return fmt.Errorf("runner installed at %s reports hash %q, want %s", p.s.runnerPath, got, want)
	}
	return nil
}

// acquireRunnerBinary returns the shared copy of the runner binary, reading
// it when no install holds it. Pair with releaseRunnerBinary.
func (p *Pool) acquireRunnerBinary() ([]byte, error) {
	p.binMu.Lock()
	defer p.binMu.Unlock()
	if p.binUsers == 0 {
		b, err := p.opts.RunnerBinary()
		if err != nil {
			return nil, err
		}
		p.bin = b
	}
	p.binUsers++
	return p.bin, nil
}

func (p *Pool) releaseRunnerBinary() {
	p.binMu.Lock()
	defer p.binMu.Unlock()
	if p.binUsers--; p.binUsers == 0 {
		p.bin = nil
	}
}

// versionHash returns the hash from a "<version> <sha256>" line.
func versionHash(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// applyListLocked records a successful "runner list" issued at (listSeq,
// listAt) and recomputes Containers, the state (idle/running) and LastBusy.
// It reports whether Containers, Reported or the state changed.
func (p *Pool) applyListLocked(w *instance, sts []runner.Status, listSeq uint64, listAt, now time.Time) bool {
	if listSeq < w.listSeq {
		return false // an older list than the one we have
	}
	// Hide containers forgotten after this list was issued.
	if len(w.forgotten) > 0 {
		keepF := w.forgotten[:0]
		for _, f := range w.forgotten {
			if f.seq > listSeq {
				keepF = append(keepF, f)
			}
		}
		w.forgotten = keepF
		if len(keepF) > 0 {
			sts = slices.DeleteFunc(sts, func(st runner.Status) bool {
				for _, f := range keepF {
					if f.id == st.ID {
						return true
					}
				}
				return false
			})
		}
	}
	if sts == nil {
		sts = []runner.Status{}
	}
	changed := w.v.Reported == nil || !slices.EqualFunc(w.v.Reported, sts, statusEqual)
	w.v.Reported = sts
	w.v.ListedAt = listAt
	w.listSeq = listSeq

	// Build the new Containers in the spare buffer (Instances copies, so
	// the pool may reuse both).
	cs := w.csSpare[:0]
	for i := range sts {
		if sts[i].State == runner.StateRunning {
			cs = append(cs, sts[i].ID)
		}
	}
	keep := w.starts[:0]
	for _, s := range w.starts {
		if s.doneSeq != 0 && s.doneSeq < listSeq {
			continue // started before the list was issued: the list is authoritative
		}
		keep = append(keep, s)
		if s.seq > listSeq || findStatus(sts, s.id) < 0 {
			if !slices.Contains(cs, s.id) {
				cs = append(cs, s.id)
			}
		}
	}
	clear(w.starts[len(keep):])
	w.starts = keep
	if !slices.Equal(cs, w.v.Containers) {
		changed = true
	}
	w.csSpare = w.v.Containers
	w.v.Containers = cs
	if len(w.kills) > 0 {
		w.kills = slices.DeleteFunc(w.kills, func(k killEntry) bool { return !slices.Contains(cs, k.id) })
	}
	prev := w.v.State
	w.updateBusy(now, "runner list")
	return changed || w.v.State != prev
}

func statusEqual(a, b runner.Status) bool {
	return a.ID == b.ID && a.PID == b.PID && a.State == b.State && a.ExitCode == b.ExitCode &&
		a.StartedAt.Equal(b.StartedAt) && a.FinishedAt.Equal(b.FinishedAt)
}

func findStatus(sts []runner.Status, id string) int {
	for i := range sts {
		if sts[i].ID == id {
			return i
		}
	}
	return -1
}
