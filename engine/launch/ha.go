// A dispatcher with [ha] enabled (docs/design.md §11): only the daemon runs
// as a node of a cluster; the terms of its leadership are hanode.go's.

package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/metrics"
	"dispatch-tui/engine/store/pgstore"
)

// errHAConsole: a console that ran its own engine would lead beside the
// cluster's nodes, without the lease.
var errHAConsole = errors.New("[ha] enabled = true: a node of a cluster runs as a daemon (dispatch-tui --daemon); open the console on one with --connect")

// checkHA refuses to build a lone engine for a config that asks for HA:
// only RunDaemon runs the elector that says when to lead.
func checkHA(cfg *config.Config) error {
	if cfg.HA.Enabled {
		return errHAConsole
	}
	return nil
}

// leaderTerm is what build needs for one term of a node's leadership.
type leaderTerm struct {
	epoch   int64
	el      *ha.Elector
	metrics *metrics.Metrics // the node's, across its terms
	// fenced is told when the store or a runner refused the epoch.
	fenced func(error)
	// hashes is the node's runner binary hash, across its terms.
	hashes *runnerHashes
}

// acting reports whether this term may still act: the elector leads with
// its epoch, by the node's own clock. A later term of the same node has
// another epoch, so an engine left of this one cannot act for it.
func (lt *leaderTerm) acting() bool {
	e, ok := lt.el.Token()
	return ok && e == lt.epoch
}

// fence is the store's: the term's epoch, and whether it may write.
func (lt *leaderTerm) fence() (int64, bool) { return lt.epoch, lt.acting() }

func (lt *leaderTerm) leader() *engine.Leader {
	return &engine.Leader{Epoch: lt.epoch, MayAct: lt.acting, Fenced: lt.fenced}
}

// runHA is RunDaemon for a node of a cluster: the API serves from the
// start, the elector runs, and the node leads (hanode.go) while it holds
// the lease. On ctx's end it stops its engine (last store write), then
// releases the lease, so that a standby takes over at its next try. Each
// term's engine gets its driver from newDriver.
func runHA(ctx context.Context, opts Options, newDriver driverMaker) error {
	cfg := opts.Config
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
		opts.Logger = log
	}
	logWarnings(opts)
	undo := UndoFreshStateDir(cfg.Dispatcher.StateDir)
	if err := prepareStateDir(&cfg.Dispatcher); err != nil {
		undo()
		return err
	}
	lease, err := pgstore.Open(pgstore.Options{URL: cfg.Store.URL})
	if err != nil {
		undo()
		return err
	}
	defer lease.Close()
	n := &haNode{opts: opts, newDriver: newDriver, log: log, node: cfg.HA.NodeName, lease: lease, wake: make(chan struct{}, 1), metrics: metrics.NewRecorder()}
	n.el = ha.New(lease, ha.Options{
		Node: n.node, Address: cfg.HA.Advertise, Lease: cfg.HA.Lease, Retry: cfg.HA.LeaseRetry, Notify: n.notify, Log: log,
		AwayWhenLost: true, // until run has stopped the lost term's engine
	})
	n.metrics.AttachHA(n.el.Stats)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	secret, err := lease.PeerSecret(sctx)
	cancel()
	if err != nil {
		undo()
		return fmt.Errorf("read the cluster's peer secret from the store: %w", err)
	}
	n.api = newRoleHandler(func(fingerprint string) *ha.Members {
		return ha.NewMembers(lease, lease, ha.MembersOptions{
			Node: n.node, Address: cfg.HA.Advertise, Fingerprint: fingerprint, Retry: cfg.HA.LeaseRetry, Token: n.el.Token, Log: log,
		})
	}, secret, n.metrics, log)
	stopAPI, err := serveWith(opts, n.api.build)
	if err != nil {
		undo()
		return err
	}
	var bg sync.WaitGroup
	// The runner binary is hashed now, while the node stands by, not
	// when it wins the lease (runnerHashes); a term's open waits for it.
	bg.Go(func() {
		if bin, err := runnerBinary(opts); err == nil {
			_, _ = n.hashes.get(bin, log) // a failure is the term's open's to report
		}
	})
	log.Info("daemon started as a node of a cluster", "node", n.node, "advertise", cfg.HA.Advertise, "lease", cfg.HA.Lease,
		"driver", cfg.Cloud.Driver, "state_dir", cfg.Dispatcher.StateDir, "config", cfg.Path)
	// The elector and the membership outlive ctx: the lease is
	// released only once the engine has written its last.
	elCtx, stopElector := context.WithCancel(context.Background())
	bg.Go(func() { n.el.Run(elCtx) })
	// A standby names the leader from its first answer on.
	n.api.members.Step(elCtx)
	bg.Go(func() { n.api.members.Run(elCtx) })

	n.run(ctx)
	log.Info("daemon stopping")
	return stopWithin(log, func() error {
		sctx, cancel := context.WithTimeout(context.Background(), StopTimeout/2)
		defer cancel()
		apiErr := stopAPI(sctx)
		stopElector()
		bg.Wait()
		return apiErr
	})
}
