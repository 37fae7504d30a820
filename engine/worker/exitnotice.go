// Exit notices: the runners' "runner watch" streams and what the pool does with them.

package worker

// Exit notices (docs/design.md §6): each ready instance whose executor can
// stream keeps a "runner watch" open, and the runner announces each
// container's exit as its supervisor records it. A notice is only a hint:
// what the pool records is the container's list line, as the runner reads
// it from its records (carried by the notice, or read with "list <id>"
// when the notice has none), applied as part of the last list, so the
// scheduler's next pass, woken at once, records the exit, has the output
// stored and the container forgotten, and uses the free slot. Probes stay the
// safety net and the health check: a notice lost with its connection is
// caught by the next probe's list, as before there were notices.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"dispatch-tui/engine/runner"
)

// noticedStatus is a container's status read after its exit notice, with
// the sequence number of that read: a list issued later replaces it.
type noticedStatus struct {
	st  runner.Status
	seq uint64
}

// watchRetryMax bounds the wait before a watch that ended is opened again
// (probe_interval when shorter): a cut connection also fails the probes,
// which say so.
const watchRetryMax = 30 * time.Second

// watchHoldMax bounds how long the starts on an instance wait for its
// first watch to be ready (startsHeldLocked): past it they go out, and the
// lists that follow starts while no watch is ready find their exits.
const watchHoldMax = 5 * time.Second

// startWatchesLocked opens a watch on each ready instance that has none
// and whose executor (made by its first probe) can keep one, and sends
// the starts that waited for a watch past watchHoldMax.
func (p *Pool) startWatchesLocked(now time.Time) {
	for _, w := range p.list {
		p.startWatchLocked(w, now)
		if len(w.startQ) > 0 {
			p.sendStartsLocked(w)
		}
	}
}

// startWatchLocked opens a watch on w if it is ready, has none and its
// executor can keep one.
func (p *Pool) startWatchLocked(w *instance, now time.Time) {
	if w.v.State == StateIdle || w.v.State == StateRunning {
		p.openWatchLocked(w, now)
	}
}

// openWatchLocked opens a watch on w, whatever its state, unless it has
// one, its last one ended too recently, or its executor (made by its first
// probe) cannot keep one.
func (p *Pool) openWatchLocked(w *instance, now time.Time) {
	if w.watchCancel != nil || w.noWatch || w.removed || p.stopped || now.Before(w.watchRetry) {
		return
	}
	if _, ok := w.exec.(runner.WatchExecutor); !ok {
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	w.watchCancel = cancel
	w.watchGen++
	w.watchOpened = now
	gen := w.watchGen
	p.watchWG.Add(1)
	go p.runWatch(ctx, w, gen)
}

// startsHeldLocked reports whether the starts queued on w wait for its
// watch: the first one opened (none failed since the last was ready) and
// not ready yet, for at most watchHoldMax. A container started before
// the watch is ready and ended before it would not be announced, only
// found by a list; held, every exit of a fresh instance is announced.
func (p *Pool) startsHeldLocked(w *instance) bool {
	return w.watchCancel != nil && !w.watching && w.watchFails == 0 &&
		p.clk.Now().Sub(w.watchOpened) < watchHoldMax
}

// runWatch keeps one watch open on w until it ends; the next Step opens
// another after a delay.
func (p *Pool) runWatch(ctx context.Context, w *instance, gen uint64) {
	defer p.watchWG.Done()
	exec, err := p.executor(w)
	if err == nil {
		client := p.runnerClient(exec)
		err = client.Watch(ctx, func() { p.watchReady(w, gen) }, func(id string, st *runner.Status) { p.exitNotice(w, gen, id, st) })
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.watchGen != gen {
		return
	}
	w.watchCancel()
	w.watchCancel = nil
	w.watching = false
	if errors.Is(err, runner.ErrNoWatch) {
		w.noWatch = true // probes only, as before
		p.sendStartsLocked(w)
		return
	}
	if p.canceled() || w.removed {
		return
	}
	w.watchFails++
	p.sendStartsLocked(w) // no longer held
	delay := min(time.Second<<min(w.watchFails-1, 10), watchRetryMax, max(p.s.probeInterval, time.Second))
	w.watchRetry = p.clk.Now().Add(delay)
	p.log.Debug("runner watch ended", "instance", string(w.v.ID), "error", errString(err), "retry_in", delay.String())
}

// stopWatchLocked ends w's watch (w leaves the pool).
func (p *Pool) stopWatchLocked(w *instance) {
	if w.watchCancel != nil {
		w.watchCancel()
	}
	w.watching = false
}

// watchReady: w's runner now announces its exits. One list right away
// catches those that ended before.
func (p *Pool) watchReady(w *instance, gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.watchGen != gen || w.removed {
		return
	}
	w.watching = true
	w.watchFails = 0
	w.nextProbe = time.Time{}
	p.sendStartsLocked(w) // the starts held for it
	p.notifyLocked()
}

// exitNotice records the status of the container id that w's runner
// announced ended, or queues a read of it when the notice carries none.
func (p *Pool) exitNotice(w *instance, gen uint64, id string, st *runner.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.watchGen != gen || w.removed || w.v.State == StateShutdown {
		return
	}
	p.stats.ExitNotices++
	if st != nil {
		// Applied by one goroutine for all the notices that came
		// meanwhile: each apply copies the instance's whole list.
		w.noticedQ = append(w.noticedQ, noticedStatus{st: *st, seq: p.nextSeqLocked()})
		if !w.applyBusy {
			w.applyBusy = true
			if !p.goLocked(func() { p.applyNotices(w) }) {
				w.applyBusy = false
				w.noticedQ = nil
			}
		}
		return
	}
	if !slices.Contains(w.noticeQ, id) {
		w.noticeQ = append(w.noticeQ, id)
	}
	if w.statusBusy {
		return // the read in flight takes it next
	}
	w.statusBusy = true
	if !p.goLocked(func() { p.runStatusReads(w) }) {
		w.statusBusy = false
		w.noticeQ = nil
	}
}

// runStatusReads reads the statuses of w's announced containers, in
// batches, until none are left.
func (p *Pool) runStatusReads(w *instance) {
	for {
		p.mu.Lock()
		n := min(len(w.noticeQ), runner.MaxBatch)
		if n == 0 || p.canceled() || w.removed {
			w.statusBusy = false
			w.noticeQ = nil
			p.mu.Unlock()
			return
		}
		ids := slices.Clone(w.noticeQ[:n])
		w.noticeQ = slices.Delete(w.noticeQ, 0, n)
		seq := p.nextSeqLocked()
		p.mu.Unlock()

		exec, err := p.executor(w)
		var sts []runner.Status
		if err == nil {
			ctx, done := p.calls.start(p.ctx, p.s.calls.Ready)
			client := p.runnerClient(exec)
			sts, err = client.Statuses(ctx, ids)
			done()
		}
		p.mu.Lock()
		p.stats.StatusReads++
		if err != nil {
			// The next probe's list reads them anyway.
			p.log.Debug("reading announced exits failed", "instance", string(w.v.ID), "containers", strings.Join(ids, ","), "error", err.Error())
		} else {
			p.applyReadLocked(w, sts, seq)
		}
		p.mu.Unlock()
	}
}

// applyNotices records the statuses the notices queued on w carry.
func (p *Pool) applyNotices(w *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := w.noticedQ
	w.noticedQ, w.applyBusy = nil, false
	p.applyNoticedLocked(w, q)
}

// applyReadLocked records the statuses read (issued at seq) after exit
// notices.
func (p *Pool) applyReadLocked(w *instance, sts []runner.Status, seq uint64) {
	ns := make([]noticedStatus, len(sts))
	for i, st := range sts {
		ns[i] = noticedStatus{st: st, seq: seq}
	}
	p.applyNoticedLocked(w, ns)
}

// applyNoticedLocked records statuses read after exit notices (each with
// the sequence number of its read) as part of w's last list
// (overlayNoticedLocked).
func (p *Pool) applyNoticedLocked(w *instance, ns []noticedStatus) {
	if w.removed || w.v.Reported == nil || w.v.State == StateShutdown {
		return
	}
	added := false
	for _, n := range ns {
		if n.seq <= w.listSeq || n.st.State != runner.StateExited || p.forgottenSinceLocked(w, n.st.ID, n.seq) {
			continue // a list issued after this read is in already, or it is stale
		}
		if w.noticed == nil {
			w.noticed = make(map[string]noticedStatus)
		}
		w.noticed[n.st.ID] = n
		if len(w.noticedNew) == 0 {
			p.exitsNoticed = append(p.exitsNoticed, w)
		}
		w.noticedNew = append(w.noticedNew, n.st.ID)
		added = true
	}
	if !added {
		return
	}
	now := p.clk.Now()
	if p.applyListLocked(w, slices.Clone(w.v.Reported), w.listSeq, w.v.ListedAt, now) {
		p.notifyLocked()
	}
}

// TakeNoticedExits appends to buf[:0] a view of each instance with exits
// noticed since the last call or Step, whose Reported holds only the
// statuses of those exits as its last list now shows them (the exit step
// records them at once, with the pass's rules; docs/design.md §6). Step
// drops what was not taken: the pass that follows it sees every status.
func (p *Pool) TakeNoticedExits(buf []InstanceView) []InstanceView {
	p.mu.Lock()
	defer p.mu.Unlock()
	buf = buf[:0]
	for _, w := range p.exitsNoticed {
		if w.removed || w.v.State == StateShutdown {
			continue // the pass handles what leaves
		}
		var rs []runner.Status
		for _, id := range w.noticedNew {
			if findStatus(rs, id) >= 0 {
				continue // noticed twice (a notice, then a read)
			}
			if i, ok := sortedStatus(w.v.Reported, id); ok && w.v.Reported[i].State == runner.StateExited {
				rs = append(rs, w.v.Reported[i])
			}
		}
		if len(rs) > 0 {
			v := w.v
			v.Containers = slices.Clone(w.v.Containers)
			v.Reported = rs
			buf = append(buf, v)
		}
	}
	p.dropNoticedExitsLocked()
	return buf
}

// dropNoticedExitsLocked forgets which exits were noticed since the last
// take.
func (p *Pool) dropNoticedExitsLocked() {
	for _, w := range p.exitsNoticed {
		w.noticedNew = w.noticedNew[:0]
	}
	clear(p.exitsNoticed)
	p.exitsNoticed = p.exitsNoticed[:0]
}

// forgottenSinceLocked reports whether id was forgotten after seq: a
// status read before that is stale.
func (p *Pool) forgottenSinceLocked(w *instance, id string, seq uint64) bool {
	for _, f := range w.forgotten {
		if f.id == id && f.seq > seq {
			return true
		}
	}
	_, forgetting := w.forgetting[id]
	return forgetting
}

// overlayNoticedLocked puts into sts, a list issued at listSeq, the
// statuses read after notices since that list was issued, and drops those
// the list is as new as. sts is the caller's own.
func (p *Pool) overlayNoticedLocked(w *instance, sts []runner.Status, listSeq uint64) []runner.Status {
	for id, n := range w.noticed {
		if n.seq <= listSeq {
			delete(w.noticed, id)
			continue
		}
		if i, found := sortedStatus(sts, id); found {
			sts[i] = n.st
		} else {
			sts = slices.Insert(sts, i, n.st)
		}
	}
	return sts
}

// sortedStatus finds id in sts, a list sorted by id as runners print it
// (or, not found there, where it goes); a list out of order is searched
// through.
func sortedStatus(sts []runner.Status, id string) (int, bool) {
	i, found := slices.BinarySearchFunc(sts, id, func(st runner.Status, id string) int { return strings.Compare(st.ID, id) })
	if !found {
		if j := findStatus(sts, id); j >= 0 {
			return j, true
		}
	}
	return i, found
}

// noticedAfter reports whether a status read after a notice, issued
// after the start issued at seq, says id ended: the start is over.
func (w *instance) noticedAfter(id string, seq uint64) bool {
	n, ok := w.noticed[id]
	return ok && n.seq > seq
}

func errString(err error) string {
	if err == nil {
		return "ended"
	}
	return err.Error()
}
