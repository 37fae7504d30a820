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
	"slices"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
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
	// and is not stopped (tests: a cloudtest driver with faults).
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
		cfg.Cloud.Driver, it.Name, it.ProviderType, c.runID, c.opts.Timeout)

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
	ci, err := engine.ResolveClusterID(c.cfg, "")
	if err != nil {
		return err
	}
	c.owner = ci.ID + OwnerSuffix
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

// inMemory reports whether the driver's instances are the cloudtest
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
	fmt.Fprintf(c.out, "%-13s %-4s %9s  %s\n", name, status, took.Round(time.Millisecond), detail)
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
		last = err
		t.Reset(c.opts.Poll)
	}
}

// callCtx bounds one command on the instance as the worker pool does.
func (c *check) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := c.cfg.Cloud.TimeoutRunnerCall
	if limit <= 0 {
		limit = sshexec.DefaultCommandTimeout
	}
	return context.WithTimeout(ctx, limit)
}

func (c *check) create(ctx context.Context) (string, error) {
	tags := cloud.Tags{
		cloud.TagOwner:        c.owner,
		cloud.TagInstanceType: c.it.Name,
		// A dispatcher that adopts it anyway runs nothing on it.
		cloud.TagIdleBehavior: string(worker.IdleHold),
		cloud.TagSecret:       c.secret,
		TagRun:                c.runID,
	}
	inst, err := c.drv.Set.Create(ctx, c.it, tags)
	if err != nil {
		return "", fmt.Errorf("create %s instance: %w; %s", c.it.Name, err, createHint(err, c.it))
	}
	c.inst = inst
	return fmt.Sprintf("instance %s (%s)", inst.ID(), inst.ProviderType()), nil
}

func createHint(err error, it cloud.InstanceType) string {
	switch cloud.ErrorKind(err) {
	case "quota":
		return "the account's quota is used up: free some instances or raise the quota"
	case "capacity":
		return fmt.Sprintf("the provider has no capacity for %s now: try another --type, or later", it.ProviderType)
	case "rate_limit":
		return "the provider throttles this account: try again in a few minutes"
	}
	return fmt.Sprintf("check the [cloud] section (credentials, image, network) and provider_type %q of instance type %s", it.ProviderType, it.Name)
}

// find returns the instance with id in a fresh listing of the check's
// instances, or nil.
func (c *check) find(ctx context.Context, id cloud.InstanceID) (cloud.Instance, error) {
	insts, err := c.drv.Set.Instances(ctx, c.runFilter())
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	for _, inst := range insts {
		if inst.ID() == id {
			return inst, nil
		}
	}
	return nil, nil
}

func (c *check) listed(ctx context.Context) (string, error) {
	id := c.inst.ID()
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		inst, err := c.find(ctx, id)
		if err != nil || inst == nil {
			if err == nil {
				err = fmt.Errorf("%s is not listed yet", id)
			}
			return false, err
		}
		c.inst = inst // the listing's view: a cloud may assign the address late
		c.seen = append(c.seen, id)
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w; the provider does not list the instance it created: check that listing by tags works with these credentials", err)
	}
	return fmt.Sprintf("%s listed, address %s", id, c.inst.Address()), nil
}

// ssh connects through the executor the worker pool would use: it checks
// the host key and, before running anything, the instance's secret.
func (c *check) ssh(ctx context.Context) (string, error) {
	exec, err := c.drv.NewExecutor(c.inst)
	if err != nil {
		return "", fmt.Errorf("executor for %s: %w", c.inst.ID(), err)
	}
	c.exec = exec
	c.client = runner.Client{Exec: exec, Path: c.cfg.Cloud.RunnerPath + "~" + c.hash}
	addr := c.inst.Address()
	err = c.poll(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := c.callCtx(ctx)
		defer cancel()
		_, _, err := exec.Execute(cctx, "true", nil)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, sshexec.ErrSecretMismatch):
			return true, fmt.Errorf("%w; the machine at %s is not the instance created (another one answers at that address), or the instance never got its secret", err, addr)
		case errors.Is(err, sshexec.ErrHostKey):
			return true, fmt.Errorf("%w; add the host's key to the file cloud.known_hosts names, or fix the address", err)
		}
		return false, err
	})
	if err != nil {
		return "", fmt.Errorf("%w; check that this machine reaches %s (firewall, security group), and cloud.ssh_user and cloud.ssh_key_file", err, addr)
	}
	if c.inMemory() {
		return "in-memory instance (the cloudtest driver has no SSH)", nil
	}
	return fmt.Sprintf("connected to %s; host key and secret checked", addr), nil
}

func (c *check) bootProbe(ctx context.Context) (string, error) {
	cmd := c.cfg.Cloud.BootProbeCommand
	if cmd == "" {
		return "", &skipError{"cloud.boot_probe_command is empty"}
	}
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := c.callCtx(ctx)
		defer cancel()
		_, stderr, err := c.exec.Execute(cctx, cmd, nil)
		if err != nil && len(stderr) > 0 {
			err = fmt.Errorf("%w (%s)", err, strings.TrimSpace(string(stderr)))
		}
		return err == nil, err
	})
	if err != nil {
		return "", fmt.Errorf("%q: %w; check cloud.boot_probe_command and that the image finishes booting", cmd, err)
	}
	return fmt.Sprintf("%q succeeded", cmd), nil
}

// checkSecret proves the executor enforces the secret: an executor for the
// same instance holding a wrong secret must be refused. The right secret
// was checked when the ssh step connected.
func (c *check) checkSecret(ctx context.Context) (string, error) {
	if c.inMemory() {
		return "", &skipError{"the cloudtest driver's instances are in memory: no SSH, no secret file to check"}
	}
	wrong := &retagged{Instance: c.inst, tags: c.inst.Tags().Clone()}
	wrong.tags[cloud.TagSecret] = randomHex(16)
	exec, err := c.drv.NewExecutor(wrong)
	if err != nil {
		return "", fmt.Errorf("executor for %s: %w", c.inst.ID(), err)
	}
	defer exec.Close()
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, _, err = exec.Execute(cctx, "true", nil)
	switch {
	case errors.Is(err, sshexec.ErrSecretMismatch):
		return "the instance proved its secret; a wrong one is refused", nil
	case err == nil:
		return "", errors.New("a connection expecting a wrong secret was accepted: the driver's executor does not check cloud.TagSecret, so it cannot tell its instance from another host at the same address; fix the driver")
	}
	return "", fmt.Errorf("connecting with a wrong secret: %w, not a secret mismatch", err)
}

// retagged is an instance seen with other tags.
type retagged struct {
	cloud.Instance
	tags cloud.Tags
}

func (r *retagged) Tags() cloud.Tags { return r.tags.Clone() }

// deploy installs the runner as the worker pool does: "runner version",
// and unless it reports our hash, the install line with the binary on
// stdin, then "runner version" again.
func (c *check) deploy(ctx context.Context) (string, error) {
	path := c.client.Path
	v, err := c.version(ctx)
	if err == nil && versionHash(v) == c.hash {
		return fmt.Sprintf("%s already installed (%s)", path, v), nil
	}
	var exitErr *runner.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return "", fmt.Errorf("%w; the instance stopped answering", err)
	}
	bin, err := os.ReadFile(c.binPath)
	if err != nil {
		return "", fmt.Errorf("read runner binary: %w", err)
	}
	_, stderr, err := c.exec.Execute(ctx, runner.InstallLine(path), bin)
	if err != nil {
		if msg := strings.TrimSpace(string(stderr)); msg != "" && !strings.Contains(err.Error(), msg) {
			err = fmt.Errorf("%w (%s)", err, msg)
		}
		return "", fmt.Errorf("install runner at %s: %w; check that cloud.runner_path's directory exists and is writable by cloud.ssh_user", path, err)
	}
	v, err = c.version(ctx)
	if err != nil {
		return "", fmt.Errorf("the runner installed at %s does not run: %w; deploy a binary built for the instance (make build builds a static linux one)", path, err)
	}
	if got := versionHash(v); got != c.hash {
		return "", fmt.Errorf("the runner installed at %s reports hash %q, want %s: something else writes that path", path, got, c.hash)
	}
	return fmt.Sprintf("installed %s (%.1f MiB)", path, float64(len(bin))/(1<<20)), nil
}

func (c *check) version(ctx context.Context) (string, error) {
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	return c.client.Version(cctx)
}

// versionHash returns the hash from a "<version> <sha256>" line.
func versionHash(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// container runs "echo" through the runner protocol and checks its exit
// code and output.
func (c *check) container(ctx context.Context) (string, error) {
	id := "cloudtest-" + c.runID
	word := "dispatch-tui-cloudtest-" + c.runID
	spec := runner.Spec{ID: id, Command: []string{"echo", word}}
	if err := c.client.Start(ctx, spec); err != nil {
		return "", fmt.Errorf("%w; the runner could not start a process on the instance", err)
	}
	var st runner.Status
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := c.callCtx(ctx)
		defer cancel()
		sts, err := c.client.List(cctx)
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(sts, func(s runner.Status) bool { return s.ID == id })
		if i < 0 {
			return true, fmt.Errorf("runner list does not show container %s, which was started", id)
		}
		st = sts[i]
		if st.State != runner.StateExited {
			return false, fmt.Errorf("container %s is still %s", id, st.State)
		}
		return true, nil
	})
	if err != nil {
		return "", err
	}
	if st.ExitCode != 0 {
		return "", fmt.Errorf("%q exited %d, want 0", strings.Join(spec.Command, " "), st.ExitCode)
	}
	out, err := c.client.Logs(ctx, id, 0)
	if err != nil {
		return "", err
	}
	if !slices.Contains(strings.Split(string(out), "\n"), word) {
		return "", fmt.Errorf("output of %q is %q, which lacks the line %q", strings.Join(spec.Command, " "), out, word)
	}
	if err := c.client.Forget(ctx, id); err != nil {
		return "", err
	}
	return fmt.Sprintf("%q exited 0 with its output", strings.Join(spec.Command, " ")), nil
}

func (c *check) tags(ctx context.Context) (string, error) {
	want := "set-" + randomHex(4)
	tags := c.inst.Tags().Clone()
	tags[TagProbe] = want
	if err := c.inst.SetTags(ctx, tags); err != nil {
		return "", fmt.Errorf("set tags: %w; check that these credentials may tag instances", err)
	}
	id := c.inst.ID()
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		inst, err := c.find(ctx, id)
		switch {
		case err != nil:
			return false, err
		case inst == nil:
			return false, fmt.Errorf("%s is no longer listed", id)
		case inst.Tags()[TagProbe] != want:
			return false, fmt.Errorf("a listing shows %s=%q, want %q", TagProbe, inst.Tags()[TagProbe], want)
		}
		c.inst = inst
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w; tags set are not read back by a listing", err)
	}
	return fmt.Sprintf("%s=%s read back by a fresh listing", TagProbe, want), nil
}

func (c *check) destroy(ctx context.Context) (string, error) {
	_ = c.exec.Close()
	id := c.inst.ID()
	if err := c.inst.Destroy(ctx); err != nil {
		return "", fmt.Errorf("destroy %s: %w", id, err)
	}
	if err := c.waitGone(ctx, []cloud.InstanceID{id}); err != nil {
		return "", err
	}
	c.destroyed = true
	return fmt.Sprintf("%s gone from the listing", id), nil
}

// waitGone polls until no listing of the check's instances shows ids.
func (c *check) waitGone(ctx context.Context, ids []cloud.InstanceID) error {
	return c.poll(ctx, func(ctx context.Context) (bool, error) {
		insts, err := c.drv.Set.Instances(ctx, c.runFilter())
		if err != nil {
			return false, fmt.Errorf("list instances: %w", err)
		}
		for _, inst := range insts {
			if slices.Contains(ids, inst.ID()) {
				return false, fmt.Errorf("%s is still listed", inst.ID())
			}
		}
		return true, nil
	})
}

// cleanup destroys, after a failure, the instance created and anything
// else tagged with the run id (a create cut short may have made one the
// check holds no handle for), and waits until no listing shows them. It
// has its own time: it runs after an interrupt or the overall timeout.
func (c *check) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Steps.Cleanup)
	defer cancel()
	t0 := time.Now()
	var targets []cloud.Instance
	var ids []cloud.InstanceID
	add := func(inst cloud.Instance) {
		if !slices.Contains(ids, inst.ID()) {
			targets = append(targets, inst)
			ids = append(ids, inst.ID())
		}
	}
	if c.inst != nil {
		add(c.inst)
	}
	insts, listErr := c.drv.Set.Instances(ctx, c.runFilter())
	for _, inst := range insts {
		add(inst)
		c.seen = append(c.seen, inst.ID())
	}
	if len(targets) == 0 {
		if listErr != nil {
			c.line(StepCleanup, "FAIL", time.Since(t0), fmt.Sprintf("list instances: %v; look for instances tagged %s=%s at the provider and destroy them", listErr, TagRun, c.runID))
			return
		}
		c.line(StepCleanup, "ok", time.Since(t0), "nothing was created")
		return
	}
	var destroyErrs []string
	for _, inst := range targets {
		// Retry: a destroy may be throttled, or fail for a while. One
		// that fails on an instance a listing showed before and no longer
		// shows (a destroy that got through before the interrupt) is
		// done; one never listed may just not be listed yet.
		if err := c.poll(ctx, func(ctx context.Context) (bool, error) {
			err := inst.Destroy(ctx)
			if err != nil && slices.Contains(c.seen, inst.ID()) {
				if cur, lerr := c.find(ctx, inst.ID()); lerr == nil && cur == nil {
					return true, nil
				}
			}
			return err == nil, err
		}); err != nil {
			destroyErrs = append(destroyErrs, fmt.Sprintf("destroy %s: %v", inst.ID(), err))
		}
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = string(id)
	}
	if err := c.waitGone(ctx, ids); err != nil {
		if len(destroyErrs) > 0 {
			err = errors.New(strings.Join(destroyErrs, "; "))
		}
		c.line(StepCleanup, "FAIL", time.Since(t0), fmt.Sprintf("could not destroy %s: %v; destroy it by hand at the provider (tagged %s=%s)",
			strings.Join(names, ", "), err, TagRun, c.runID))
		return
	}
	c.line(StepCleanup, "ok", time.Since(t0), fmt.Sprintf("destroyed %s; nothing left", strings.Join(names, ", ")))
}
