// Package cloudcheck is "dispatch-tui cloudtest", the operator's check of a
// driver config before a dispatcher depends on it. It starts the driver the
// config names (as the engine does, through launch.NewDriver), creates one
// instance and takes it through every step the worker pool relies on:
// listing, SSH, the boot probe, the per-instance secret, runner deployment,
// a container, tags, destroy. It prints one line per step with its duration
// and destroys what it created whatever happens: a failed step, the overall
// timeout, or an interrupt.
package cloudcheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/worker"
)

// Step names, as printed.
const (
	StepCreate    = "create"
	StepListed    = "listed"
	StepSSH       = "ssh"
	StepBootProbe = "boot probe"
	StepSecret    = "secret"
	StepDeploy    = "deploy runner"
	StepContainer = "container"
	StepTags      = "tags"
	StepDestroy   = "destroy"
	StepCleanup   = "cleanup"
)

// Steps are the steps of a check, in order (cleanup runs only after a
// failure).
var Steps = []string{StepCreate, StepListed, StepSSH, StepBootProbe, StepSecret, StepDeploy, StepContainer, StepTags, StepDestroy}

// Tags the check sets besides the dispatcher's own.
const (
	// TagRun marks the check's instance with its run id: what cleanup
	// finds it by, and what to look for at the provider if it leaked.
	TagRun = cloud.TagPrefix + "cloudtest"
	// TagProbe is the tag the "tags" step sets and reads back.
	TagProbe = cloud.TagPrefix + "cloudtest-tag"
	// OwnerSuffix is appended to the cluster id in the check's owner tag,
	// so that a dispatcher running on the same config sees the instance
	// as another dispatcher's and leaves it alone.
	OwnerSuffix = "-cloudtest"
)

// Defaults.
const (
	DefaultTimeout = 30 * time.Minute
	DefaultPoll    = time.Second
)

// StepTimeouts bound each step; a zero field takes the default from
// DefaultStepTimeouts. The overall Options.Timeout bounds them together.
type StepTimeouts struct {
	Create    time.Duration // the create call
	Listed    time.Duration // until a listing shows the new instance
	SSH       time.Duration // until the executor connects (host key and secret checked)
	BootProbe time.Duration // until cloud.boot_probe_command succeeds
	Secret    time.Duration // a connection with a wrong secret is refused
	Deploy    time.Duration // install the runner and check its version
	Container time.Duration // start, wait for its exit, read its output, forget
	Tags      time.Duration // set, then until a fresh listing shows them
	Destroy   time.Duration // the destroy call, then until no listing shows it
	Cleanup   time.Duration // after a failure: destroy and see it gone; on top of the overall timeout
}

// DefaultStepTimeouts are the step limits for cfg: SSH and the boot probe
// get cloud.timeout_booting, as the worker pool gives a booting instance.
func DefaultStepTimeouts(cfg *config.Config) StepTimeouts {
	return StepTimeouts{
		Create:    3 * time.Minute,
		Listed:    2 * time.Minute,
		SSH:       cfg.Cloud.TimeoutBooting,
		BootProbe: cfg.Cloud.TimeoutBooting,
		Secret:    time.Minute,
		Deploy:    5 * time.Minute,
		Container: 2 * time.Minute,
		Tags:      2 * time.Minute,
		Destroy:   5 * time.Minute,
		Cleanup:   5 * time.Minute,
	}
}

// Options for Run.
type Options struct {
	// Type is the configured instance type to create; "" = the cheapest.
	Type string
	// Timeout bounds the steps together; 0 = DefaultTimeout. Cleanup
	// after a failure has StepTimeouts.Cleanup on top of it.
	Timeout time.Duration
	// Steps overrides step limits; zero fields keep the defaults.
	Steps StepTimeouts
	// RunnerBinary is the dispatch-tui executable to deploy as the
	// runner; "" = this process's own executable.
	RunnerBinary string
	Logger       *slog.Logger
	// Poll is the interval of the steps that wait; 0 = DefaultPoll.
	Poll time.Duration
	// Driver, if set, is used instead of the driver the config names,
	// and is not stopped (tests: a fake driver with faults).
	Driver *launch.Driver
	// BeforeStep, if set, is called before each step with its name and
	// the instance (nil before create): tests cancel or tamper there.
	BeforeStep func(step string, inst cloud.Instance)
}

// StepError is Run's error when a step failed (or was cut short by the
// timeout or an interrupt).
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// UsageError is Run's error for options that cannot work with the
// config (an unknown --type): nothing was created.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// skipError marks a step that does not apply to the driver; its message
// says why.
type skipError struct{ why string }

func (e *skipError) Error() string { return e.why }

// Run checks the driver cfg names, printing one line per step to out. It
// returns nil only if every step held; a *StepError names the step that
// did not, a *UsageError an option that cannot work; other errors come
// from starting the driver. Whatever happens after the create, it
// destroys the instance (and anything else tagged with its run id) before
// it returns, and says so.
func Run(ctx context.Context, cfg *config.Config, opts Options, out io.Writer) error {
	it, err := pickType(cfg, opts.Type)
	if err != nil {
		return err
	}
	c := &check{cfg: cfg, opts: opts, out: out, it: it, started: time.Now()}
	c.fillDefaults()
	if err := c.setup(); err != nil {
		return err
	}
	if c.stopDriver {
		defer c.drv.Set.Stop()
	}
	fmt.Fprintf(out, "cloudtest: driver %s, type %s (provider type %s), run %s, timeout %s\n",
		cfg.Cloud.Driver, termsafe.Escape(it.Name), termsafe.Escape(it.ProviderType), c.runID, c.opts.Timeout)

	runCtx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	c.parent, c.ctx = ctx, runCtx
	c.runSteps()
	if c.exec != nil {
		_ = c.exec.Close()
	}
	if c.failed != nil && !c.destroyed {
		c.cleanup(context.WithoutCancel(ctx))
	}
	took := time.Since(c.started).Round(time.Millisecond)
	switch {
	case c.failed == nil:
		fmt.Fprintf(out, "cloudtest: ok, every step held (%s)\n", took)
		return nil
	case ctx.Err() != nil:
		fmt.Fprintf(out, "cloudtest: interrupted at step %q (%s)\n", c.failed.Step, took)
	default:
		fmt.Fprintf(out, "cloudtest: FAILED at step %q (%s)\n", c.failed.Step, took)
	}
	return c.failed
}

// pickType returns the configured type named name, or the cheapest.
func pickType(cfg *config.Config, name string) (cloud.InstanceType, error) {
	if len(cfg.InstanceTypes) == 0 {
		return cloud.InstanceType{}, &UsageError{"the config has no instance types: add an [[instance_type]] to it"}
	}
	if name == "" {
		return cfg.InstanceTypes[0], nil // sorted by price
	}
	var names []string
	for _, it := range cfg.InstanceTypes {
		if it.Name == name {
			return it, nil
		}
		names = append(names, it.Name)
	}
	return cloud.InstanceType{}, &UsageError{fmt.Sprintf("unknown instance type %q: use one of the config's: %s", name, strings.Join(names, ", "))}
}

// check is one run; only Run's goroutine uses it.
type check struct {
	cfg     *config.Config
	opts    Options
	out     io.Writer
	it      cloud.InstanceType
	started time.Time

	drv        *launch.Driver
	stopDriver bool
	binPath    string
	hash       string
	owner      string
	runID      string
	secret     string

	parent context.Context // the caller's: done on interrupt
	ctx    context.Context // parent with the overall timeout

	inst      cloud.Instance     // nil until created
	seen      []cloud.InstanceID // instances a listing has shown
	exec      runner.Executor
	client    runner.Client
	failed    *StepError
	destroyed bool
}

func (c *check) fillDefaults() {
	if c.opts.Timeout <= 0 {
		c.opts.Timeout = DefaultTimeout
	}
	if c.opts.Poll <= 0 {
		c.opts.Poll = DefaultPoll
	}
	if c.opts.Logger == nil {
		c.opts.Logger = slog.New(slog.DiscardHandler)
	}
	def := DefaultStepTimeouts(c.cfg)
	s := &c.opts.Steps
	for _, p := range []struct{ v, d *time.Duration }{
		{&s.Create, &def.Create}, {&s.Listed, &def.Listed}, {&s.SSH, &def.SSH},
		{&s.BootProbe, &def.BootProbe}, {&s.Secret, &def.Secret}, {&s.Deploy, &def.Deploy},
		{&s.Container, &def.Container}, {&s.Tags, &def.Tags}, {&s.Destroy, &def.Destroy},
		{&s.Cleanup, &def.Cleanup},
	} {
		if *p.v <= 0 {
			*p.v = *p.d
		}
	}
}

// setup hashes the runner binary, resolves who we are and starts the
// driver as the engine would.
func (c *check) setup() error {
	c.binPath = c.opts.RunnerBinary
	if c.binPath == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find own executable to deploy as the runner: %w", err)
		}
		c.binPath = self
	}
	hash, err := runner.FileHash(c.binPath)
	if err != nil {
		return fmt.Errorf("hash runner binary: %w", err)
	}
	c.hash = hash
	if err := launch.PrepareStateDir(c.cfg); err != nil {
		return err
	}
	// The check runs beside the dispatcher, which may hold the store: it
	// keeps no id of its own, and a running dispatcher's is not needed
	// (the suffix and the run tag keep their instances apart).
	id, err := engine.KeptClusterID(c.cfg)
	if err != nil {
		return err
	}
	if id == "" {
		id = "dt"
	}
	c.owner = id + OwnerSuffix
	c.runID = randomHex(4)
	c.secret = randomHex(16)
	c.drv = c.opts.Driver
	if c.drv == nil {
		c.drv, err = launch.NewDriver(c.cfg, engine.ClusterIdentity{ID: c.owner}, hash, c.opts.Logger)
		if err != nil {
			return fmt.Errorf("%w: fix the [cloud] section of the config (dispatch-tui check-config FILE checks it)", err)
		}
		c.stopDriver = true
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// runFilter selects the check's own instances.
func (c *check) runFilter() cloud.Tags {
	return cloud.Tags{cloud.TagOwner: c.owner, TagRun: c.runID}
}

// inMemory reports whether the driver's instances are the fake
// driver's: no SSH, hence no secret to check.
func (c *check) inMemory() bool { return c.drv.InMemory }

func (c *check) runSteps() {
	steps := []struct {
		name  string
		limit time.Duration
		fn    func(context.Context) (string, error)
	}{
		{StepCreate, c.opts.Steps.Create, c.create},
		{StepListed, c.opts.Steps.Listed, c.listed},
		{StepSSH, c.opts.Steps.SSH, c.ssh},
		{StepBootProbe, c.opts.Steps.BootProbe, c.bootProbe},
		{StepSecret, c.opts.Steps.Secret, c.checkSecret},
		{StepDeploy, c.opts.Steps.Deploy, c.deploy},
		{StepContainer, c.opts.Steps.Container, c.container},
		{StepTags, c.opts.Steps.Tags, c.tags},
		{StepDestroy, c.opts.Steps.Destroy, c.destroy},
	}
	for _, s := range steps {
		if !c.step(s.name, s.limit, s.fn) {
			return
		}
	}
}

// step runs fn under limit (and the overall timeout) and prints its line.
func (c *check) step(name string, limit time.Duration, fn func(context.Context) (string, error)) bool {
	if c.opts.BeforeStep != nil {
		c.opts.BeforeStep(name, c.inst)
	}
	ctx, cancel := context.WithTimeout(c.ctx, limit)
	defer cancel()
	t0 := time.Now()
	var detail string
	err := ctx.Err() // interrupted before it started
	if err == nil {
		detail, err = fn(ctx)
	}
	took := time.Since(t0)
	var skip *skipError
	switch {
	case err == nil:
		c.line(name, "ok", took, detail)
		return true
	case errors.As(err, &skip):
		c.line(name, "skip", took, skip.why)
		return true
	}
	if ctx.Err() != nil {
		err = c.cutShort(ctx, limit, err)
	}
	c.failed = &StepError{Step: name, Err: err}
	c.line(name, "FAIL", took, err.Error())
	return false
}

// cutShort explains why a step's context ended: an interrupt, the overall
// timeout or the step's own limit.
func (c *check) cutShort(ctx context.Context, limit time.Duration, err error) error {
	switch {
	case c.parent.Err() != nil:
		return fmt.Errorf("interrupted: %w; cleaning up", c.parent.Err())
	case c.ctx.Err() != nil:
		return fmt.Errorf("the overall timeout (--timeout %s) ran out; run again with a longer --timeout: %w", c.opts.Timeout, err)
	}
	return fmt.Errorf("not done within the step's limit of %s: %w", limit, err)
}

func (c *check) line(name, status string, took time.Duration, detail string) {
	// detail may quote the provider's or the instance's words.
	fmt.Fprintf(c.out, "%-13s %-4s %9s  %s\n", name, status, took.Round(time.Millisecond), termsafe.Escape(detail))
}

// poll calls try every Poll until it reports done or ctx ends; a done try
// returns its error as the result. At the end of ctx the error names the
// last failure seen.
func (c *check) poll(ctx context.Context, try func(context.Context) (done bool, err error)) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w; last error: %v", ctx.Err(), last)
			}
			return ctx.Err()
		case <-t.C:
		}
		done, err := try(ctx)
		if done {
			return err
		}
		// A try cut short by the deadline says only that: keep the error
		// before it, which says why the tries failed.
		if ctx.Err() == nil || last == nil {
			last = err
		}
		t.Reset(c.opts.Poll)
	}
}

// callCtx bounds one command on the instance as the worker pool bounds a
// ready instance's probe call. The check has no clock of its own to keep
// the deadline on: it runs in real time.
func (c *check) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, worker.CallTimeoutsOf(&c.cfg.Cloud).Ready)
}
