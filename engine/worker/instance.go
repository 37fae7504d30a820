// One instance and its state machine.

package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// State is an instance's state in the pool; states.txt draws the states and
// lists the changes between them. Defined with the edge's instance view.
type State = view.InstanceState

// Instance states.
const (
	StateUnknown  = view.InstanceUnknown
	StateBooting  = view.InstanceBooting
	StateIdle     = view.InstanceIdle
	StateRunning  = view.InstanceRunning
	StateShutdown = view.InstanceShutdown
)

type startEntry struct {
	id      string
	seq     uint64 // when issued
	doneSeq uint64 // when it completed successfully (0 = in flight)
}

type killEntry struct {
	id       string
	termAt   time.Time
	termSeq  uint64
	killSent bool
}

type forgotEntry struct {
	id  string
	seq uint64
}

// instance is one cloud instance in the pool and its state machine.
type instance struct {
	pool  *Pool
	inst  cloud.Instance
	itype cloud.InstanceType
	v     InstanceView // Containers and Reported are owned by the instance
	exec  runner.Executor

	removed  bool
	addedSeq uint64
	seenGen  uint64
	initial  bool // found by the first listing
	probed   bool // probed at least once

	// pub is the change log's record of the instance, and marked: it is
	// in the log's list of rows to settle (changes.go).
	pub    *published
	marked bool

	probing      bool
	nextProbe    time.Time
	probeFailing bool
	lastProbeOK  time.Time
	readyAt      time.Time
	listSeq      uint64

	// The probe in flight: its cancel, when it started, and the deadline
	// (on the pool's clock) and name of the call it is making. overdue:
	// it was already counted as failed when that deadline passed.
	probeCancel  context.CancelFunc
	probeStart   time.Time
	callStage    string
	callLimit    time.Duration
	callDeadline time.Time
	probeOverdue bool
	// hostKeyReported: a host key refusal of this run of failures is
	// already an event.
	hostKeyReported bool
	// Redeploys of a runner found missing on a ready instance that failed
	// in a row, and no new try before redeployRetry (redeploy.go).
	redeployFails int
	redeployRetry time.Time

	csSpare []string // spare buffer for Containers
	// lists parses the runner's lists the probes read, one probe at a
	// time (probing): a list read again as it was makes no new strings.
	lists  runner.ListParser
	starts []startEntry
	kills  []killEntry
	// forgetting holds the containers queued or sent for forget: the
	// scheduler asks again for every exited container on every pass, so
	// the check must not walk them all.
	forgetting map[string]struct{}
	forgotten  []forgotEntry
	// forgetWarned is the last forget failure warned about per container:
	// the scheduler asks again every pass, and the same failure repeated
	// is logged at debug level, not as a warning a pass.
	forgetWarned map[string]string

	// Specs and ids waiting for the next "runner batch" call, and whether
	// a goroutine is sending batches for this instance.
	startQ     []runner.Spec
	startBusy  bool
	forgetQ    []string
	forgetBusy bool

	// The output of exited containers is stored before the destroy
	// (collect.go): needLogs are those still to store, from the runner's
	// last list at shutdown; the destroy waits until collectDone.
	shutdownReason string
	needLogs       []string
	collecting     bool
	collectDone    bool
	collectStart   time.Time
	collectRetry   time.Time
	// logsRetry: containers whose output could not be stored are not
	// fetched again before this (their runner keeps them meanwhile).
	logsRetry map[string]time.Time

	// interruptNoticed: the provider's interruption notice was read
	// (spotnotice.go); it is not read again.
	interruptNoticed bool

	destroying bool
	destroyed  bool // last Destroy call succeeded
	// keptForCollection: past timeout_probe but kept out of shutdown
	// (fence.go); the event saying so was sent.
	keptForCollection bool
	destroyAt         time.Time
	// destroyRetry: after a failed destroy, no new attempt before this.
	destroyRetry    time.Time
	destroyFailures int

	tagsDirty    bool
	tagsInFlight bool

	// Exit notices (exitnotice.go): the watch's cancel (nil: none open) and
	// generation, when it was opened, whether it is ready, whether the
	// executor cannot keep one (noWatch), failures in a row and when to
	// open one again; the
	// announced containers whose status is to be read, whether a read is
	// in flight, the statuses notices carried not applied yet, whether a
	// goroutine applies them, the statuses read since the last list, and
	// the ids of those not yet taken by the engine's exit step
	// (TakeNoticedExits).
	watchCancel context.CancelFunc
	watchGen    uint64
	watchOpened time.Time
	watching    bool
	noWatch     bool
	watchFails  int
	watchRetry  time.Time
	noticeQ     []string
	statusBusy  bool
	noticedQ    []noticedStatus // carried by notices, to apply
	applyBusy   bool
	noticed     map[string]noticedStatus
	noticedNew  []string
}

// autoShutdownReason returns why w should be shut down now ("" = keep).
// The caller has checked that w is not held.
func (p *Pool) autoShutdownReason(w *instance, now time.Time) string {
	switch w.v.State {
	case StateBooting:
		if now.Sub(w.v.AppearedAt) > p.s.timeoutBooting {
			return fmt.Sprintf("boot timeout: not ready after %s", p.s.timeoutBooting)
		}
		return ""
	case StateUnknown, StateIdle, StateRunning:
		if w.probeFailing {
			since := w.v.AppearedAt
			if w.lastProbeOK.After(since) {
				since = w.lastProbeOK
			}
			if now.Sub(since) > p.s.timeoutProbe && !p.keepForCollection(w, now) {
				return fmt.Sprintf("probe timeout: probes failing for %s: %s", now.Sub(since).Round(time.Second), w.v.LastError)
			}
		}
	}
	if w.v.State != StateIdle || len(w.starts) > 0 || len(w.v.Containers) > 0 {
		return ""
	}
	if w.probeFailing {
		// Idle as last seen, but not answering: a shutdown now could not
		// fetch the output of what exited there and would record it lost
		// at once. It waits until the instance answers, or timeout_probe
		// (above) judges it.
		return ""
	}
	switch w.v.IdleBehavior {
	case IdleDrain:
		return "drained"
	case IdleRun:
		since := w.v.LastBusy
		if w.readyAt.After(since) {
			since = w.readyAt
		}
		if now.Sub(since) >= p.s.timeoutIdle {
			return fmt.Sprintf("idle for %s", now.Sub(since).Round(time.Second))
		}
	}
	return ""
}

// setState moves w to state to; why says what caused it. Every state
// change goes through here, and states.txt lists the changes allowed: one
// it does not list is a bug, logged as an error (and failing the pool's
// tests). The pool's mutex must be held.
func (w *instance) setState(to State, why string) {
	from := w.v.State
	if from == to {
		return
	}
	p := w.pool
	if !p.transitions.Allows(string(from), string(to)) {
		p.log.Error("instance state change missing from states.txt", "instance", string(w.v.ID),
			"from", stateName(from), "to", stateName(to), "why", why)
	}
	w.v.State = to
	w.rowChanged()
	if p.log.Enabled(context.Background(), slog.LevelDebug) { // spare the arguments' allocations
		p.log.Debug("instance state", "instance", string(w.v.ID), "from", stateName(from), "to", stateName(to), "why", why)
	}
	if p.onTransition != nil {
		p.onTransition(w.v.ID, from, to, why)
	}
}

// ready moves a booting or unknown instance to idle or running after its
// first successful probe.
func (w *instance) ready(now time.Time) {
	p := w.pool
	prev := w.v.State
	w.readyAt = now
	if prev == StateBooting {
		w.v.BootedAt = now
		w.viewChanged()
		if !w.v.AskedAt.IsZero() {
			p.stats.BootTime.observe(now.Sub(w.v.AskedAt))
		}
	}
	if len(w.v.Containers) > 0 {
		w.setState(StateRunning, "first probe: the runner reports running containers")
	} else {
		w.setState(StateIdle, "first probe: no container running")
	}
	p.eventLocked(now, w.v.ID, EventState, fmt.Sprintf("%s -> %s (%d containers)", prev, w.v.State, len(w.v.Containers)), slog.LevelInfo)
}

// updateBusy moves a ready instance between idle and running to match
// Containers, and records when it was last busy.
func (w *instance) updateBusy(now time.Time, why string) {
	if len(w.v.Containers) > 0 {
		w.v.LastBusy = now
	}
	switch w.v.State {
	case StateIdle, StateRunning:
		if len(w.v.Containers) > 0 {
			w.setState(StateRunning, why)
		} else {
			w.setState(StateIdle, why)
		}
	}
}

// shutdown moves w to state shutdown and starts destroying it.
func (w *instance) shutdown(now time.Time, reason string) {
	if w.v.State == StateShutdown {
		return
	}
	p := w.pool
	w.setState(StateShutdown, reason)
	w.tagsDirty = false
	w.kills = nil
	w.shutdownReason = reason
	w.collectStart = now
	w.needLogs = w.needLogs[:0]
	for _, st := range w.v.Reported {
		if st.State == runner.StateExited {
			w.needLogs = append(w.needLogs, st.ID)
		}
	}
	p.eventLocked(now, w.v.ID, EventShutdown, "shutdown: "+reason, slog.LevelInfo)
	p.notifyLocked()
	p.startDestroyLocked(w, now)
}

// startDestroyLocked destroys w once the output of its exited containers
// is stored (or cannot be).
func (p *Pool) startDestroyLocked(w *instance, now time.Time) {
	if !w.collectDone {
		p.collectLocked(w, now)
		return
	}
	if w.destroying || !p.cloudAllowedLocked(now) {
		return
	}
	w.destroying = true
	inst := w.inst
	if !p.goLocked(func() {
		err := p.mayAct()
		if err == nil {
			err = inst.Destroy(p.ctx)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		w.destroying = false
		if err != nil && p.canceled() {
			return
		}
		now := p.clk.Now()
		p.countOpLocked("destroy", err)
		if err != nil {
			w.v.LastError = err.Error()
			w.rowChanged()
			p.cloudErrLocked(now, w.v.ID, "destroy", err)
			// Retry, but not on every step: a host that refuses forever
			// would flood the cloud and the event log.
			w.destroyFailures++
			w.destroyRetry = now.Add(min(time.Duration(w.destroyFailures)*time.Second, p.s.timeoutShutdown))
			return
		}
		w.destroyed = true
		w.destroyAt = now
		w.destroyedLocked()
		p.notifyLocked()
		p.log.Info("destroyed instance", "instance", string(w.v.ID))
		p.syncAtLocked(now.Add(p.s.timeoutShutdown))
	}) {
		w.destroying = false
	}
}

// runnerClient is the runner on the instance exec reaches, as every call
// of the pool's makes it: at the configured path, carrying the epoch.
func (p *Pool) runnerClient(exec runner.Executor) runner.Client {
	return runner.Client{Exec: exec, Path: p.s.runnerPath, Epoch: p.s.epoch}
}

// executor returns w's executor, creating it on first use.
func (p *Pool) executor(w *instance) (runner.Executor, error) {
	p.mu.Lock()
	if e := w.exec; e != nil {
		p.mu.Unlock()
		return e, nil
	}
	if w.removed || p.stopped {
		p.mu.Unlock()
		return nil, errRemoved
	}
	inst := w.inst
	p.mu.Unlock()
	e, err := p.opts.NewExecutor(inst)
	if err != nil {
		return nil, err
	}
	e = withCallDeadline(e, p.calls, p.s.calls.Slow)
	p.mu.Lock()
	if w.exec == nil && !w.removed && !p.stopped {
		w.exec = e
		p.mu.Unlock()
		return e, nil
	}
	cur := w.exec
	p.mu.Unlock()
	e.Close()
	if cur == nil {
		return nil, errRemoved
	}
	return cur, nil
}
