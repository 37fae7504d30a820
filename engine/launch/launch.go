// Package launch builds an Engine from a configuration: it picks the cloud
// driver, the executor that reaches its instances over SSH, and the runner
// binary to deploy to them. main (daemon, TUI) and end-to-end tests use it.
package launch

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/cloud/local"
	"dispatch-tui/cloud/sshhosts"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/metrics"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
	"dispatch-tui/engine/store"
)

// Options for New.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// RunnerBinary is the dispatch-tui executable deployed to instances as
	// the runner; "" = this process's own executable.
	RunnerBinary string
	// Timeouts of the API server; nil = DefaultTimeouts.
	Timeouts *Timeouts
}

// driverMaker makes the driver of each engine built: NewDriver, the one
// cfg names. runHA takes it as an argument rather than an option so that
// the takeover benchmark (a test of this package) can give its nodes,
// in one process, one fake cloud to share, as a cluster's nodes share
// the real one, with no field in Options that only a test sets.
type driverMaker func(cfg *config.Config, ci engine.ClusterIdentity, hash string, log *slog.Logger) (*Driver, error)

// Running is an Engine together with the driver it owns and its metrics.
type Running struct {
	*engine.Engine
	Driver  cloud.InstanceSet
	Metrics *metrics.Metrics
}

// Close stops the engine, then the driver. Instances and their containers
// keep running.
func (r *Running) Close() error {
	err := r.Engine.Close()
	r.Driver.Stop()
	return err
}

// New builds the engine for opts.Config. It starts nothing: call Run.
func New(opts Options) (*Running, error) {
	logWarnings(opts)
	if err := checkHA(opts.Config); err != nil {
		return nil, err
	}
	return build(opts, nil, NewDriver)
}

// logWarnings logs what the config warned of.
func logWarnings(opts Options) {
	if opts.Logger == nil {
		return
	}
	for _, w := range opts.Config.Warnings {
		opts.Logger.Warn("config: "+w.Msg, "file", w.File, "line", w.Line, "key", w.Key)
	}
}

// build is New, its driver made by newDriver; with lt, the engine of one
// term of an HA node's leadership (hanode.go): its store fenced by the
// term's epoch, its pool acting with that epoch while the lease lasts, its
// metrics the node's.
func build(opts Options, lt *leaderTerm, newDriver driverMaker) (*Running, error) {
	cfg := opts.Config
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := prepareStateDir(&cfg.Dispatcher); err != nil {
		return nil, err
	}
	bin, err := runnerBinary(opts)
	if err != nil {
		return nil, err
	}
	hash, err := "", error(nil)
	if lt != nil && lt.hashes != nil {
		hash, err = lt.hashes.get(bin, log)
	} else {
		hash, err = hashRunner(bin, log)
	}
	if err != nil {
		return nil, err
	}
	readBinary := func() ([]byte, error) { return os.ReadFile(bin) }

	// Who we are in the owner tag, kept in the store: the drivers that
	// keep claims on shared hosts need it as well as the engine.
	var (
		st      store.Store
		existed bool
	)
	if lt != nil {
		st, err = engine.OpenFencedStore(cfg, lt.fence)
	} else {
		st, existed, err = engine.OpenStore(cfg, "")
	}
	if err != nil {
		return nil, err
	}
	ci, err := engine.ResolveClusterID(cfg, st, existed)
	if err != nil {
		st.Close()
		return nil, err
	}
	ci.Log(log)
	drv, err := newDriver(cfg, ci, hash, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	m := metrics.NewRecorder()
	var leader *engine.Leader
	if lt != nil {
		m, leader = lt.metrics, lt.leader()
	}
	eng, err := engine.New(engine.Options{
		Config: cfg, InstanceSet: drv.Set, NewExecutor: drv.NewExecutor, Logger: log,
		Owner: ci.ID, AdoptLegacyOwner: ci.AdoptLegacy, Store: st,
		RunnerHash: hash, RunnerBinary: readBinary, OnPass: m.ObservePass, Leader: leader,
	})
	if err != nil {
		drv.Set.Stop()
		return nil, err
	}
	m.Attach(eng)
	return &Running{Engine: eng, Driver: drv.Set, Metrics: m}, nil
}

// Driver is the cloud driver cfg names, with the way the worker pool
// reaches its instances.
type Driver struct {
	Set cloud.InstanceSet
	// NewExecutor returns the executor for one of Set's instances: over
	// SSH it checks the instance's host key and, before anything else
	// runs, the secret in its cloud.TagSecret tag.
	NewExecutor func(cloud.Instance) (runner.Executor, error)
	// InMemory: the instances are the fake driver's, without SSH, so there is
	// no host key or secret to check.
	InMemory bool
}

// NewDriver starts the driver cfg.Cloud.Driver names, acting as ci (the
// owner tag; drivers that claim shared hosts need it). hash is the runner
// binary's hash, which names the runner path of drivers that keep it per
// host. The engine and "dispatch-tui cloudtest" both build drivers here,
// so a driver added here is covered by both. Stop the Set when done.
func NewDriver(cfg *config.Config, ci engine.ClusterIdentity, hash string, log *slog.Logger) (*Driver, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var legacyOwner string
	if ci.AdoptLegacy {
		legacyOwner = engine.LegacyOwner
	}
	var (
		set     cloud.InstanceSet
		newExec func(cloud.Instance) (runner.Executor, error)
	)
	switch cfg.Cloud.Driver {
	case "local":
		d, err := local.New(local.Options{
			Dir: filepath.Join(cfg.Dispatcher.StateDir, "local"), BootDelay: cfg.Cloud.Local.BootDelay, Logger: log,
		})
		if err != nil {
			return nil, fmt.Errorf("start local driver: %w", err)
		}
		set = d
		newExec = func(inst cloud.Instance) (runner.Executor, error) {
			key, ok := d.HostKey(inst.ID())
			if !ok {
				return nil, fmt.Errorf("local instance %s has no host key", inst.ID())
			}
			return sshexec.New(sshexec.Options{
				Address: inst.Address(), User: "dispatch-tui", Signer: d.ClientSigner(),
				HostKeyCallback: sshexec.Pinned(key), Secret: inst.Tags()[cloud.TagSecret],
			}), nil
		}
	case "sshhosts":
		d, err := sshhosts.New(sshhosts.Options{
			Hosts: sshHosts(cfg.Cloud.SSHHosts.Hosts), Types: cfg.InstanceTypes,
			DefaultUser: cfg.Cloud.SSHUser, DefaultKeyFile: cfg.Cloud.SSHKeyFile,
			KnownHosts: cfg.Cloud.KnownHosts, RunnerPath: cfg.Cloud.RunnerPath + "~" + hash,
			Owner: ci.ID, LegacyOwner: legacyOwner, Logger: log,
		})
		if err != nil {
			return nil, fmt.Errorf("start sshhosts driver: %w", err)
		}
		set, newExec = d, d.Executor
	case "ec2":
		d, err := newEC2(cfg, log)
		if err != nil {
			return nil, err
		}
		set, newExec = d, d.Executor
	case "script":
		d, err := newScript(cfg, log)
		if err != nil {
			return nil, err
		}
		set, newExec = d, d.Executor
	case "fake":
		// In-memory cloud and runner: nothing runs and nothing survives
		// a restart. For load tests of the dispatcher itself.
		d := fake.New(fake.Options{Clock: clock.Real{}, BootDelay: cfg.Cloud.Local.BootDelay})
		set, newExec = d, d.Executor
	default:
		return nil, fmt.Errorf("cloud.driver %q is not supported: use one of %s", cfg.Cloud.Driver, strings.Join(config.Drivers, ", "))
	}
	_, inMemory := set.(*fake.Driver)
	return &Driver{Set: set, NewExecutor: newExec, InMemory: inMemory}, nil
}

// sshHosts converts the configured [[cloud.sshhosts.host]] entries to the
// driver's own host type: the cloud drivers do not read the config.
func sshHosts(hs []config.SSHHost) []sshhosts.Host {
	out := make([]sshhosts.Host, len(hs))
	for i, h := range hs {
		out[i] = sshhosts.Host{
			Address: h.Address, InstanceType: h.InstanceType,
			User: h.User, KeyFile: h.KeyFile, WorkDir: h.WorkDir,
		}
	}
	return out
}
