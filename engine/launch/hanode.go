// One daemon with [ha] enabled (docs/design.md §11): it serves the API in
// both roles, runs no engine while another node holds the lease, and while
// it holds it runs an engine for that term, which it stops at once when
// the term ends.

package launch

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/metrics"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/store/pgstore"
)

// haNode is one node of a cluster. Its run goroutine owns the term.
type haNode struct {
	opts    Options
	log     *slog.Logger
	node    string
	lease   *pgstore.Store // the lease's own connections, never fenced
	el      *ha.Elector
	metrics *metrics.Metrics
	api     *roleHandler

	newDriver driverMaker // makes each term's engine's driver

	mu      sync.Mutex // guards changes and notes
	changes []ha.Change
	// notes are events this node could not write when they happened
	// (its store was fenced): written by its next term, logged at once.
	notes []note
	wake  chan struct{} // a change is waiting

	hashes runnerHashes // the runner binary's hash, for every term

	term *termRun // run's: the engine of the term led now; nil standing by
	// openFailures is run's: the terms in a row whose engine would not
	// open, which the wait before the next try grows with.
	openFailures int
}

// termRun is the engine of one term, running.
type termRun struct {
	epoch  int64
	r      *Running
	cancel context.CancelFunc
	done   chan struct{} // closed when r.Run returned
}

type note struct{ kind, target, action, reason string }

// actor is who the node's own events are recorded as.
func (n *haNode) actor() string { return "node:" + n.node }

// notify is the elector's Notify: it queues the change for run.
func (n *haNode) notify(c ha.Change) {
	n.mu.Lock()
	n.changes = append(n.changes, c)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *haNode) take() []ha.Change {
	n.mu.Lock()
	defer n.mu.Unlock()
	cs := n.changes
	n.changes = nil
	return cs
}

// noteLater keeps an event for the node's next term.
func (n *haNode) noteLater(nt note) {
	n.mu.Lock()
	n.notes = append(n.notes, nt)
	n.mu.Unlock()
}

// fenced is a term's: the store or a runner refused its epoch, so another
// node leads. The term ends now, not at the next renewal.
func (n *haNode) fenced(epoch int64, err error) {
	n.log.Warn("ha: a newer leader's epoch refused this node's; standing by", "node", n.node, "epoch", epoch, "err", err)
	if runner.IsFenced(err) {
		n.noteLater(note{"fenced", n.node, "refused", fmt.Sprintf("a runner refused node %s's epoch %d: %v", n.node, epoch, err)})
	}
	n.el.Resign(epoch, ha.LostFenced+": "+err.Error())
}

// run follows the elector's changes until ctx ends, then stops the term
// it leads (its last store write made) so that the lease can be released.
func (n *haNode) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			if t := n.term; t != nil {
				n.stopTerm(t, ha.LostReleased, true)
			}
			return
		case <-n.wake:
		}
		for _, c := range n.take() {
			switch c.Kind {
			case ha.Elected:
				n.lead(ctx, c)
			case ha.Lost:
				if t := n.term; t != nil && t.epoch == c.Epoch {
					n.stopTerm(t, c.Why, false)
				}
				// The elector stayed away from the lease since the loss
				// (ha.Options.AwayWhenLost): this node can lead again.
				n.el.StayAway(false)
			}
		}
	}
}

// lead opens the engine for the term won in c: the restart path (load the
// store, list the cloud and every runner, raising each to the new epoch,
// before judging anything), with the store fenced by the epoch.
func (n *haNode) lead(ctx context.Context, c ha.Change) {
	if t := n.term; t != nil { // a Lost always comes first; be sure
		n.stopTerm(t, "a newer term began", false)
	}
	_, _, prev := n.api.members.Role() // the lease as last read: who led before
	began := time.Now()
	lt := &leaderTerm{epoch: c.Epoch, el: n.el, metrics: n.metrics, hashes: &n.hashes}
	lt.fenced = func(err error) { n.fenced(lt.epoch, err) }
	r, err := build(n.opts, lt, n.newDriver)
	if err != nil {
		// The lease is given up, not kept while retrying at once: a node
		// that can open its engine leads meanwhile.
		n.openFailures++
		wait := ha.OpenBackoff(n.opts.Config.HA.LeaseRetry, n.openFailures)
		n.log.Error("ha: cannot open the engine for this term; giving the lease up", "node", n.node, "epoch", c.Epoch,
			"err", err, "failures_in_a_row", n.openFailures, "next_try_in", wait)
		n.el.StandAside(ctx, c.Epoch, "this node could not open its engine: "+err.Error(), wait)
		return
	}
	n.openFailures = 0
	expired := "it was free (the store's first leader)"
	switch {
	case c.ExpiredFor < 0:
		expired = "it was this node's own, still running"
	case c.ExpiredFor > 0:
		expired = "it had been expired for " + c.ExpiredFor.Round(time.Millisecond).String()
	}
	r.Note(n.actor(), "leader_elected", n.node, "elected", fmt.Sprintf("node %s leads with epoch %d; %s", n.node, c.Epoch, expired))
	if prev.Node != "" && prev.Node != n.node {
		r.Note(n.actor(), "leader_lost", prev.Node, "deposed", fmt.Sprintf("node %s no longer leads (epoch %d): its lease ran out without a renewal", prev.Node, prev.Epoch))
	}
	n.mu.Lock()
	notes := n.notes
	n.notes = nil
	n.mu.Unlock()
	for _, nt := range notes {
		r.Note(n.actor(), nt.kind, nt.target, nt.action, nt.reason+" (recorded when the node next led)")
	}
	tctx, cancel := context.WithCancel(ctx)
	t := &termRun{epoch: c.Epoch, r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		r.Run(tctx)
	}()
	n.term = t
	n.metrics.Attach(r.Engine)
	n.api.lead(r.Engine)
	n.log.Info("ha: leading; engine open", "node", n.node, "epoch", c.Epoch, "expired_for", c.ExpiredFor, "open", time.Since(began))
}

// stopTerm stops t's engine at once: the API stands by first, then the
// engine's loop ends and it closes. A released term (a clean stop) still
// holds the lease, so its leader_lost event and last flush are written;
// a term lost otherwise writes nothing more (its store refuses it), and
// its leader_lost waits for the node's next term.
func (n *haNode) stopTerm(t *termRun, why string, released bool) {
	n.term = nil
	n.api.standBy()
	n.metrics.Attach(nil)
	msg := fmt.Sprintf("node %s no longer leads with epoch %d: %s", n.node, t.epoch, why)
	if released {
		t.r.Note(n.actor(), "leader_lost", n.node, "released", msg)
	} else {
		n.log.Warn("ha: "+msg, "node", n.node, "epoch", t.epoch)
		n.noteLater(note{"leader_lost", n.node, "lost", msg})
	}
	began := time.Now()
	t.cancel()
	<-t.done
	switch err := t.r.Close(); {
	case err == nil:
		n.log.Info("ha: engine stopped", "node", n.node, "epoch", t.epoch, "took", time.Since(began))
	case released:
		n.log.Error("ha: engine stop", "node", n.node, "epoch", t.epoch, "err", err, "took", time.Since(began))
	default:
		n.log.Info("ha: engine stopped; its last writes were refused, as this node no longer leads", "node", n.node, "epoch", t.epoch, "err", err, "took", time.Since(began))
	}
}
