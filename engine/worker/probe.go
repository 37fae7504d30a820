// Probes: each call under its deadline, runner deployment, applying "runner list".

package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
)

func (p *Pool) startProbesLocked(now time.Time) {
	n := len(p.list)
	if n == 0 {
		return
	}
	start := p.probeCursor % n
	exhausted := false
	for i := 0; i < n; i++ {
		j := (start + i) % n
		w := p.list[j]
		if w.probing || w.v.State == StateShutdown || now.Before(w.nextProbe) {
			continue
		}
		// The first probe of what the first listing found is not held by
		// max_probes_per_second: nothing starts until every one has been
		// made (Ready), so spreading them only delays a restart's or a
		// takeover's first start (by a hundred seconds at a thousand
		// instances and the default rate).
		if !w.initial || w.probed {
			if exhausted {
				continue
			}
			if !p.probeBucket.take(now) {
				p.probeCursor = j
				if p.ready { // no first probe is left to make
					return
				}
				exhausted = true
				continue
			}
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
	ctx, cancel := context.WithCancel(p.probeCtx)
	w.probeCancel = cancel
	w.probeStart = now
	nr := noticeReaderLocked(w, mode)
	if !p.goLocked(func() { p.runProbe(ctx, w, mode, nr) }) {
		w.probing = false
		w.probeCancel = nil
		cancel()
	}
}

// probeCall is one probe in flight: it tells the pool which call it is in
// and that call's deadline, so that Step counts the probe as failed, and
// cancels it, as soon as that deadline passes on the pool's clock, without
// waiting for the call to return. The call has no other deadline.
type probeCall struct {
	p     *Pool
	w     *instance
	ctx   context.Context // canceled by Step at a call's deadline, or by Stop; clock-bound
	limit time.Duration   // each call's deadline (the install's is longer)
	stage string
}

// call runs fn as stage, bounded by limit.
func (c *probeCall) call(stage string, limit time.Duration, fn func(context.Context) error) error {
	c.stage = stage
	c.p.mu.Lock()
	c.w.callStage = stage
	c.w.callLimit = limit
	c.w.callDeadline = c.p.clk.Now().Add(limit)
	c.p.mu.Unlock()
	// The deadline is kept on the pool's clock alone: Step cancels ctx
	// once it has passed (checkProbeDeadlineLocked). ctx is clock-bound
	// (Pool.probeCtx).
	err := fn(c.ctx)
	if err != nil && c.ctx.Err() != nil && !c.p.canceled() {
		err = fmt.Errorf("no answer within %s: %w", limit, err)
	}
	return err
}

// runProbe probes w; nr, when not nil, reads the provider's interruption
// notice after the runner's list (spotnotice.go).
func (p *Pool) runProbe(ctx context.Context, w *instance, mode probeMode, nr cloud.NoticeReader) {
	t0 := p.clk.Now()
	var (
		sts     []runner.Status
		listSeq uint64
		listAt  time.Time
	)
	// A ready instance's probe is what shows a cut within seconds; a
	// booting or adopted one deploys and starts the runner first.
	limit := p.s.calls.Ready
	if mode != probeList {
		limit = p.s.calls.Slow
	}
	pc := &probeCall{p: p, w: w, ctx: ctx, limit: limit}
	exec, err := p.executor(w)
	if err != nil {
		pc.stage = "connect"
	}
	client := p.runnerClient(exec)
	client.Lists = &w.lists // w.probing: this probe is the only user
	if err == nil && mode == probeAdopt {
		p.watchWhileAdopting(w)
	}
	if err == nil && mode == probeBoot && p.s.bootProbe != "" {
		err = pc.call("boot probe", pc.limit, func(ctx context.Context) error {
			_, _, err := exec.Execute(ctx, p.s.bootProbe, nil)
			return err
		})
	}
	listWith := func(fetch func(context.Context) ([]runner.Status, error)) error {
		p.mu.Lock()
		listSeq = p.nextSeqLocked()
		listAt = p.clk.Now()
		p.mu.Unlock()
		return pc.call("runner list", pc.limit, func(ctx context.Context) error {
			var err error
			sts, err = fetch(ctx)
			p.noteFenced(err)
			return err
		})
	}
	list := func() error { return listWith(client.List) }
	listed := false
	if err == nil && mode == probeAdopt {
		listed, err = p.adoptList(exec, client, listWith)
	}
	if err == nil && !listed && mode != probeList {
		_, err = p.ensureRunner(pc, exec, &client)
	}
	if err == nil && !listed {
		err = list()
		// A ready instance whose runner binary is gone (a temp cleaner)
		// answers "not found": install it again, and read its list as
		// usual, the runner's records having survived (redeploy.go).
		if err != nil && mode == probeList && runnerMissing(err) {
			if err = p.redeployRunner(pc, w, exec, &client, err); err == nil {
				err = list()
			}
		}
	}
	var nt notice
	if err == nil && nr != nil {
		nt = p.readNotice(pc, exec, nr)
	}
	lat := p.clk.Now().Sub(t0)

	p.mu.Lock()
	defer p.mu.Unlock()
	w.probing = false
	w.probeCancel()
	w.probeCancel = nil
	w.callDeadline = time.Time{}
	overdue := w.probeOverdue
	w.probeOverdue = false
	if w.removed || (err != nil && p.canceled()) {
		return
	}
	now := p.clk.Now()
	w.v.LastProbe = now
	w.probed = true
	if overdue { // counted, as failed, when its deadline passed
		if err != nil {
			return
		}
	} else {
		p.countProbeLocked(lat)
		var rb *runnerBrokenError
		if errors.As(err, &rb) {
			p.runnerBrokenLocked(w, now, rb.Error())
			return
		}
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, pc.stage) { // the runner client's errors name their verb
				msg = pc.stage + ": " + msg
			}
			p.probeFailedLocked(w, now, t0, msg, err)
			if mode == probeBoot && w.v.State == StateBooting && w.v.IdleBehavior != IdleHold && definiteBootError(pc.stage, err) {
				p.bootFailedLocked(w, now, msg)
			}
			return
		}
	}
	changed := w.probeFailing || w.v.LastError != "" || w.v.ContainersLost != ""
	if w.v.LastError != "" || w.v.ProbeError != "" || w.v.ProbeFailing || !w.v.UnreachableSince.IsZero() {
		w.rowChanged() // cleared below; a probe that changes nothing marks nothing
	}
	w.answeredLocked()
	if !w.v.UnreachableSince.IsZero() {
		p.eventLocked(now, w.v.ID, EventProbeOK, fmt.Sprintf("reachable again after %s (unreachable since %s)",
			now.Sub(w.v.UnreachableSince).Round(time.Second), w.v.UnreachableSince.Format(time.TimeOnly)), slog.LevelInfo)
		w.v.UnreachableSince = time.Time{}
	}
	w.probeFailing = false
	w.hostKeyReported = false
	w.redeployFails = 0
	w.lastProbeOK = now
	w.v.LastError = ""
	w.v.ProbeError = ""
	w.v.ProbeFailing = false
	prev := w.v.State
	if p.applyListLocked(w, sts, listSeq, listAt, now) {
		changed = true
	}
	if prev == StateBooting || prev == StateUnknown {
		p.bootOKLocked(w.itype.Name)
		w.ready(now)
		changed = true
	}
	if nt.ok {
		p.noticedLocked(w, nt, now)
	}
	if changed {
		p.notifyLocked()
	}
}

// checkProbeDeadlineLocked counts w's probe as failed once the call it is
// making is past its deadline on the pool's clock, and cancels it: an
// instance that stops answering is shown unreachable at that deadline, not
// whenever the call finally returns.
func (p *Pool) checkProbeDeadlineLocked(w *instance, now time.Time) {
	if !w.probing || w.probeOverdue || w.callDeadline.IsZero() || now.Before(w.callDeadline) {
		return
	}
	w.probeOverdue = true
	w.probeCancel()
	w.v.LastProbe = now
	w.probed = true
	p.countProbeLocked(now.Sub(w.probeStart))
	msg := fmt.Sprintf("%s: no answer within %s", w.callStage, w.callLimit)
	p.probeFailedLocked(w, now, w.probeStart, msg, context.DeadlineExceeded)
}

// countProbeLocked counts a probe that ended (or was given up on) after lat.
func (p *Pool) countProbeLocked(lat time.Duration) {
	p.stats.Probes++
	p.stats.ProbeTime += lat
	p.stats.ProbeMaxTime = max(p.stats.ProbeMaxTime, lat)
	p.stats.ProbeLatency.observe(lat)
}

// probeFailedLocked records a failed probe that started at started. The
// first failure of a ready (or adopted) instance makes it unreachable since
// then, with one event; later ones only update LastError. A booting
// instance is not expected to answer yet, except that a refused host key is
// worth an event at once.
func (p *Pool) probeFailedLocked(w *instance, now, started time.Time, msg string, err error) {
	p.stats.ProbeFailures++
	w.rowChanged()
	w.v.ProbeError = msg
	if w.v.State != StateBooting {
		w.v.LastError = msg
	}
	w.v.ProbeFailing = true
	w.probeFailing = true
	hostKey := errors.Is(err, sshexec.ErrHostKey) && !w.hostKeyReported
	if hostKey {
		w.hostKeyReported = true
	}
	switch {
	case w.v.State == StateBooting || w.v.State == StateShutdown:
		if hostKey {
			w.v.LastError = msg // a refused key will not fix itself by waiting
			p.eventLocked(now, w.v.ID, EventProbeError, "host key refused: "+msg, slog.LevelWarn)
		} else {
			p.log.Debug("probe failed", "instance", string(w.v.ID), "state", string(w.v.State), "error", msg)
		}
	case w.v.UnreachableSince.IsZero():
		w.v.UnreachableSince = started
		p.eventLocked(now, w.v.ID, EventProbeError, fmt.Sprintf("unreachable since %s: %s",
			started.Format(time.TimeOnly), msg), slog.LevelWarn)
	default:
		p.log.Debug("probe failed", "instance", string(w.v.ID), "state", string(w.v.State), "error", msg)
	}
	p.notifyLocked()
}

// ensureRunner installs the runner if "runner version" does not report
// RunnerHash; installed says whether it did.
func (p *Pool) ensureRunner(pc *probeCall, exec runner.Executor, client *runner.Client) (installed bool, err error) {
	want := p.opts.RunnerHash
	if want == "" {
		return false, nil
	}
	version := func() (v string, err error) {
		err = pc.call("runner deploy", pc.limit, func(ctx context.Context) error {
			v, err = client.Version(ctx)
			return err
		})
		return v, err
	}
	v, err := version()
	if err == nil && versionHash(v) == want {
		return false, nil
	}
	if runner.IsFenced(err) {
		// A newer leader's runner: installing is not this node's to do.
		p.noteFenced(err)
		return false, err
	}
	if p.canceled() {
		return false, p.ctx.Err()
	}
	var exitErr *runner.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		// No answer (a dead connection, a deadline): installing would
		// only wait longer. A runner that is missing exits non-zero.
		return false, err
	}
	if p.opts.RunnerBinary == nil {
		return false, &deployError{fmt.Errorf("runner at %s reports %q, want hash %s, and no binary to install", p.s.runnerPath, v, want)}
	}
	bin, err := p.acquireRunnerBinary()
	if err != nil {
		return false, fmt.Errorf("reading runner binary: %w", err)
	}
	var stderr []byte
	err = pc.call("runner deploy", p.s.calls.Slow, func(ctx context.Context) error {
		var err error
		_, stderr, err = exec.Execute(ctx, runner.InstallLine(p.s.runnerPath, int64(len(bin))), bin)
		return err
	})
	p.releaseRunnerBinary()
	if err != nil {
		if msg := strings.TrimSpace(string(stderr)); msg != "" && !strings.Contains(err.Error(), msg) {
			err = fmt.Errorf("%w (%s)", err, msg)
		}
		err = fmt.Errorf("installing runner at %s: %w", p.s.runnerPath, err)
		if errors.As(err, &exitErr) { // it ran and failed: e.g. a missing directory
			err = &deployError{err}
		}
		return false, err
	}
	p.mu.Lock()
	p.stats.RunnerDeploys++
	p.mu.Unlock()
	v, err = version()
	if err != nil {
		if errors.As(err, &exitErr) { // installed, but does not run
			err = &deployError{fmt.Errorf("runner installed at %s: %w", p.s.runnerPath, err)}
		}
		return true, err
	}
	if got := versionHash(v); got != want {
		return true, &deployError{fmt.Errorf("runner installed at %s reports hash %q, want %s", p.s.runnerPath, got, want)}
	}
	return true, nil
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
	// Statuses read after exit notices since this list was issued.
	sts = p.overlayNoticedLocked(w, sts, listSeq)
	if sts == nil {
		sts = []runner.Status{}
	}
	same := w.v.Reported != nil && slices.EqualFunc(w.v.Reported, sts, runner.Status.Equal)
	if !same {
		w.viewChanged()
	}
	changed := !same && (w.v.Reported == nil || !slices.EqualFunc(w.v.Reported, sts, statusEqual))
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
		if (s.seq > listSeq || findStatus(sts, s.id) < 0) && !w.noticedAfter(s.id, s.seq) {
			if !slices.Contains(cs, s.id) {
				cs = append(cs, s.id)
			}
		}
	}
	clear(w.starts[len(keep):])
	w.starts = keep
	if !slices.Equal(cs, w.v.Containers) {
		changed = true
		w.rowChanged()
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
