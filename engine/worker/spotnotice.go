// Interruption notices read with the probes; the instance drained at once.

package worker

// Interruption notices (cloud.NoticeReader): a provider that announces on
// the instance itself that it will take it back (EC2's two-minute spot
// notice) is read with the instance's probes. On a notice the instance is
// drained at once, so that nothing new starts there and it is shut down as
// soon as its containers end; the listing is asked for when the provider
// said it would act, and what the instance still runs when it goes is
// requeued without spending an attempt (preempt.go).

import (
	"context"
	"log/slog"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// noticeSyncDelay is how long after the announced time the listing is
// asked for: the provider starts shutting the instance down then.
const noticeSyncDelay = 5 * time.Second

// noticeReaderLocked is the notice reader a probe of w in mode uses: only
// a ready instance's regular probe reads it, until a notice is seen, and
// only when its driver has a command for it (an on-demand instance has
// none and pays nothing).
func noticeReaderLocked(w *instance, mode probeMode) cloud.NoticeReader {
	if mode != probeList || w.interruptNoticed {
		return nil
	}
	nr, ok := w.inst.(cloud.NoticeReader)
	if !ok || nr.NoticeCommand() == "" {
		return nil
	}
	return nr
}

// notice is what a probe read of the provider's notice.
type notice struct {
	why string
	at  time.Time
	ok  bool
}

// readNotice runs the notice command on the instance. A failed read is no
// failed probe: the runner answered, and the next probe reads again.
func (p *Pool) readNotice(pc *probeCall, exec runner.Executor, nr cloud.NoticeReader) notice {
	var out []byte
	err := pc.call("interruption notice", pc.limit, func(ctx context.Context) error {
		var err error
		out, _, err = exec.Execute(ctx, nr.NoticeCommand(), nil)
		return err
	})
	if err != nil {
		p.log.Debug("reading the interruption notice failed", "instance", string(pc.w.v.ID), "error", err.Error())
		return notice{}
	}
	why, at, ok := nr.ParseNotice(out)
	return notice{why: why, at: at, ok: ok}
}

// noticedLocked acts on a notice read on w: drained at once (a held one
// stays held: nothing new goes there either), an event, the listing asked
// for at the announced time, and the interruption remembered, so that the
// containers still there when it goes are requeued without an attempt.
func (p *Pool) noticedLocked(w *instance, n notice, now time.Time) {
	if w.interruptNoticed || w.v.Preempted || w.v.State == StateShutdown {
		return
	}
	w.interruptNoticed = true
	id := string(w.v.ID)
	p.rememberPreemptedLocked(w.v.ID, "instance "+id+" was interrupted (spot): "+n.why, now)
	if w.v.IdleBehavior == IdleRun {
		w.v.IdleBehavior = IdleDrain
		w.rowChanged()
	}
	p.eventLocked(now, w.v.ID, EventPreempted, "instance "+id+": "+n.why+"; drained: nothing new starts there", slog.LevelWarn)
	if !n.at.IsZero() {
		p.noticeSyncs = append(p.noticeSyncs, n.at.Add(noticeSyncDelay))
		p.syncAtLocked(n.at.Add(noticeSyncDelay))
	}
	p.notifyLocked()
}

// noticeSyncLocked brings the next listing forward to the earliest
// announced interruption after now, dropping those past.
func (p *Pool) noticeSyncLocked(now time.Time) {
	keep := p.noticeSyncs[:0]
	for _, t := range p.noticeSyncs {
		if t.After(now) {
			keep = append(keep, t)
			if t.Before(p.nextSync) {
				p.nextSync = t
			}
		}
	}
	p.noticeSyncs = keep
}
