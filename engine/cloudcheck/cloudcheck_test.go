package cloudcheck

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/cloud/local"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/runner"
)

// testConfig is the default config on driver, with a private state dir
// and a short boot delay for the local driver (so that ssh waits).
func testConfig(t *testing.T, driver string) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Dispatcher.StateDir = t.TempDir()
	cfg.Cloud.Driver = driver
	cfg.Cloud.Local.BootDelay = 100 * time.Millisecond
	cfg.Cloud.RunnerPath = filepath.Join(t.TempDir(), "runner")
	return cfg
}

// fakeRunner is a "binary" for the fake driver, whose in-memory
// runner only hashes what is installed.
func fakeRunner(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "runner-bin")
	if err := os.WriteFile(p, []byte("not really a runner"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// realRunner is the dispatch-tui binary, built once: the local driver's
// instances run it.
func realRunner(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cloudcheck-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin, buildErr = enginetest.BuildBinary(dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// fakeDriver is an in-memory driver with faults, as Options.Driver.
func fakeDriver(o fake.Options) (*fake.Driver, *launch.Driver) {
	o.Clock = clock.Real{}
	d := fake.New(o)
	return d, &launch.Driver{Set: d, NewExecutor: d.Executor, InMemory: true}
}

// localDriver starts the local driver as the engine would, for a test
// that wraps its executors; it is stopped at cleanup.
func localDriver(t *testing.T, cfg *config.Config, bin string) *launch.Driver {
	t.Helper()
	hash, err := runner.FileHash(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := launch.PrepareStateDir(cfg); err != nil {
		t.Fatal(err)
	}
	drv, err := launch.NewDriver(cfg, engine.ClusterIdentity{ID: "test"}, hash, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drv.Set.Stop)
	return drv
}

// localLeft lists the local driver's instances left in cfg's state dir,
// through a driver of its own (as a restarted dispatcher would find them).
func localLeft(t *testing.T, cfg *config.Config) []cloud.InstanceID {
	t.Helper()
	d, err := local.New(local.Options{Dir: filepath.Join(cfg.Dispatcher.StateDir, "local")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	insts, err := d.Instances(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []cloud.InstanceID
	for _, inst := range insts {
		ids = append(ids, inst.ID())
	}
	return ids
}

// stepLine matches a step's line: name, status, duration, detail.
func stepLine(step, status string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(step) + ` +` + status + ` +\S+  .*$`)
}

func wantLines(t *testing.T, out string, steps []string, status func(step string) string) {
	t.Helper()
	for _, s := range steps {
		if !stepLine(s, status(s)).MatchString(out) {
			t.Errorf("no %q line with status %s in:\n%s", s, status(s), out)
		}
	}
}

func TestEveryStepHolds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		driver   string
		injected bool // Options.Driver: a fake driver the test can look into
	}{
		{"fake from the config", "fake", false},
		{"fake injected", "fake", true},
		{"local", "local", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, tc.driver)
			opts := Options{Poll: 10 * time.Millisecond, Timeout: wait.Budget(time.Minute)}
			var ct *fake.Driver
			if tc.injected {
				ct, opts.Driver = fakeDriver(fake.Options{BootDelay: 50 * time.Millisecond})
			}
			if tc.driver == "local" {
				opts.RunnerBinary = realRunner(t)
			} else {
				opts.RunnerBinary = fakeRunner(t)
			}
			var out bytes.Buffer
			if err := Run(context.Background(), cfg, opts, &out); err != nil {
				t.Fatalf("Run: %v\n%s", err, &out)
			}
			wantLines(t, out.String(), Steps, func(s string) string {
				if s == StepSecret && tc.driver == "fake" {
					return "skip"
				}
				return "ok"
			})
			if !strings.Contains(out.String(), "cloudtest: ok, every step held") || strings.Contains(out.String(), StepCleanup) {
				t.Errorf("output:\n%s", &out)
			}
			if ct != nil {
				if live := ct.Live(); len(live) != 0 {
					t.Errorf("instances left: %v", live)
				}
				if st := ct.Stats(); st.Created != 1 || st.Destroyed != 1 || st.Installs != 1 || st.Starts != 1 {
					t.Errorf("driver stats %+v: want one create, destroy, runner install and start", st)
				}
			}
			if tc.driver == "local" {
				if left := localLeft(t, cfg); len(left) != 0 {
					t.Errorf("local instances left: %v", left)
				}
			}
		})
	}
}

// failExec fails command lines containing match with a non-zero exit, as
// a shell would.
type failExec struct {
	runner.Executor
	match string
}

func (e *failExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	if strings.Contains(cmd, e.match) {
		return nil, []byte("sh: permission denied\n"), &runner.ExitError{Code: 1, Stderr: "sh: permission denied"}
	}
	return e.Executor.Execute(ctx, cmd, stdin)
}

// A failing step fails the run with its line and the reason, and the
// cleanup leaves nothing behind (or, when destroy itself fails, says what
// to destroy by hand).
func TestFailingStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults fake.Options
		wrap   func(runner.Executor) runner.Executor
		steps  StepTimeouts
		step   string
		want   string // in the failed step's line
		leaked int
		clean  string // in the cleanup line
	}{
		{name: "create error", faults: fake.Options{CreateErrorRate: 1},
			step: StepCreate, want: `injected failure; check the \[cloud\] section`, clean: "ok .*nothing was created"},
		{name: "no capacity", faults: fake.Options{CapacityErrorTypes: []string{"small"}},
			step: StepCreate, want: "try another --type", clean: "ok .*nothing was created"},
		{name: "quota", faults: fake.Options{Quota: 1}, steps: StepTimeouts{},
			step: StepCreate, want: "quota is used up", clean: "ok .*nothing was created"},
		{name: "never boots", faults: fake.Options{BrokenRate: 1}, steps: StepTimeouts{SSH: 200 * time.Millisecond},
			step: StepSSH, want: "not done within the step's limit of 200ms.*handshake failed", clean: "ok .*destroyed ct-0001; nothing left"},
		{name: "runner install refused", wrap: func(e runner.Executor) runner.Executor { return &failExec{e, "cat > "} },
			step: StepDeploy, want: "permission denied.*writable by cloud.ssh_user", clean: "ok .*destroyed ct-0001"},
		{name: "container refused", wrap: func(e runner.Executor) runner.Executor { return &failExec{e, "runner start"} },
			step: StepContainer, want: "permission denied; the runner could not start a process", clean: "ok .*destroyed ct-0001"},
		{name: "destroy refused", faults: fake.Options{DestroyErrorRate: 1}, steps: StepTimeouts{Cleanup: 200 * time.Millisecond},
			step: StepDestroy, want: "destroy ct-0001: .*injected failure", leaked: 1,
			clean: "FAIL .*could not destroy ct-0001: destroy ct-0001: .*injected failure.*destroy it by hand at the provider \\(tagged dispatch-tui-cloudtest="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, "fake")
			ct, drv := fakeDriver(tc.faults)
			if tc.name == "quota" {
				ct.Configure(func(f *fake.Faults) { f.ForeignInstances = 1 })
			}
			if tc.wrap != nil {
				inner := drv.NewExecutor
				drv.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
					e, err := inner(inst)
					if err != nil {
						return nil, err
					}
					return tc.wrap(e), nil
				}
			}
			var out bytes.Buffer
			err := Run(context.Background(), cfg, Options{
				Driver: drv, RunnerBinary: fakeRunner(t), Poll: 10 * time.Millisecond, Timeout: wait.Budget(time.Minute), Steps: tc.steps,
			}, &out)
			var se *StepError
			if !errors.As(err, &se) || se.Step != tc.step {
				t.Fatalf("Run: %v, want a StepError of step %q\n%s", err, tc.step, &out)
			}
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(tc.step) + ` +FAIL +\S+  .*` + tc.want).MatchString(out.String()) {
				t.Errorf("no FAIL line for %s matching %q:\n%s", tc.step, tc.want, &out)
			}
			if !regexp.MustCompile(`(?m)^cleanup +` + tc.clean).MatchString(out.String()) {
				t.Errorf("no cleanup line matching %q:\n%s", tc.clean, &out)
			}
			if !strings.Contains(out.String(), `cloudtest: FAILED at step "`+tc.step+`"`) {
				t.Errorf("no summary line:\n%s", &out)
			}
			if live := ct.Live(); len(live) != tc.leaked {
				t.Errorf("instances left: %v, want %d", live, tc.leaked)
			}
		})
	}
}

// blockExec cancels the run when a command containing match starts, and
// holds that command until its context ends: an interrupt in the middle
// of a call on the instance.
type blockExec struct {
	runner.Executor
	match  string
	cancel context.CancelFunc
}

func (e *blockExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	if strings.Contains(cmd, e.match) {
		e.cancel()
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	return e.Executor.Execute(ctx, cmd, stdin)
}

// An interrupt (main cancels the context on SIGINT) before any step, or in
// the middle of one, leaves no instance behind.
func TestInterruptLeaksNothing(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		for _, step := range Steps {
			t.Run("before "+step, func(t *testing.T) {
				cfg := testConfig(t, "fake")
				ct, drv := fakeDriver(fake.Options{})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var out bytes.Buffer
				err := Run(ctx, cfg, Options{
					Driver: drv, RunnerBinary: fakeRunner(t), Poll: 10 * time.Millisecond,
					BeforeStep: func(s string, _ cloud.Instance) {
						if s == step {
							cancel()
						}
					},
				}, &out)
				checkInterrupted(t, err, step, out.String())
				if live := ct.Live(); len(live) != 0 {
					t.Errorf("instances left: %v", live)
				}
			})
		}
	})
	for _, tc := range []struct{ step, match string }{
		{StepSSH, "true"},
		{StepDeploy, "cat > "},
		{StepContainer, "runner start"},
	} {
		t.Run("local, during "+tc.step, func(t *testing.T) {
			cfg := testConfig(t, "local")
			bin := realRunner(t)
			drv := localDriver(t, cfg, bin)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inner := drv.NewExecutor
			drv.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
				e, err := inner(inst)
				if err != nil {
					return nil, err
				}
				return &blockExec{Executor: e, match: tc.match, cancel: cancel}, nil
			}
			var out bytes.Buffer
			err := Run(ctx, cfg, Options{Driver: drv, RunnerBinary: bin, Poll: 10 * time.Millisecond}, &out)
			checkInterrupted(t, err, tc.step, out.String())
			drv.Set.Stop()
			if left := localLeft(t, cfg); len(left) != 0 {
				t.Errorf("local instances left: %v", left)
			}
		})
	}
}

func checkInterrupted(t *testing.T, err error, step, out string) {
	t.Helper()
	var se *StepError
	if !errors.As(err, &se) || se.Step != step || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want a StepError of step %q wrapping context.Canceled\n%s", err, step, out)
	}
	if !stepLine(step, "FAIL").MatchString(out) || !strings.Contains(out, "interrupted: context canceled; cleaning up") {
		t.Errorf("no interrupted FAIL line for %s:\n%s", step, out)
	}
	if !regexp.MustCompile(`(?m)^cleanup +ok `).MatchString(out) || !strings.Contains(out, `cloudtest: interrupted at step "`+step+`"`) {
		t.Errorf("no cleanup ok and summary lines:\n%s", out)
	}
}

// An instance that does not hold the secret it was created with fails the
// ssh step at once (the executor's check, as the worker pool's), and is
// destroyed.
func TestWrongSecretOnInstance(t *testing.T) {
	cfg := testConfig(t, "local")
	bin := realRunner(t)
	var out bytes.Buffer
	err := Run(context.Background(), cfg, Options{
		RunnerBinary: bin, Poll: 10 * time.Millisecond, Timeout: wait.Budget(time.Minute),
		BeforeStep: func(step string, inst cloud.Instance) {
			if step != StepSSH {
				return
			}
			home := inst.(*local.Instance).Home()
			if err := os.WriteFile(filepath.Join(home, ".dispatch-tui-secret"), []byte("impostor"), 0o600); err != nil {
				t.Error(err)
			}
		},
	}, &out)
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepSSH {
		t.Fatalf("Run: %v, want a StepError of step ssh\n%s", err, &out)
	}
	if !regexp.MustCompile(`(?m)^ssh +FAIL .*instance secret mismatch.*is not the instance created`).MatchString(out.String()) {
		t.Errorf("no secret mismatch line:\n%s", &out)
	}
	if left := localLeft(t, cfg); len(left) != 0 {
		t.Errorf("local instances left: %v", left)
	}
}

// A driver whose executor ignores the secret fails the secret step: it
// could not tell its instance from another host at the address.
func TestDriverIgnoringSecretFails(t *testing.T) {
	cfg := testConfig(t, "local")
	bin := realRunner(t)
	drv := localDriver(t, cfg, bin)
	inner := drv.NewExecutor
	drv.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
		tags := inst.Tags()
		delete(tags, cloud.TagSecret)
		return inner(&retagged{Instance: inst, tags: tags})
	}
	var out bytes.Buffer
	err := Run(context.Background(), cfg, Options{Driver: drv, RunnerBinary: bin, Poll: 10 * time.Millisecond, Timeout: wait.Budget(time.Minute)}, &out)
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepSecret {
		t.Fatalf("Run: %v, want a StepError of step secret\n%s", err, &out)
	}
	if !regexp.MustCompile(`(?m)^secret +FAIL .*does not check cloud.TagSecret`).MatchString(out.String()) {
		t.Errorf("no secret FAIL line:\n%s", &out)
	}
	drv.Set.Stop()
	if left := localLeft(t, cfg); len(left) != 0 {
		t.Errorf("local instances left: %v", left)
	}
}

func TestUnknownType(t *testing.T) {
	cfg := testConfig(t, "fake")
	ct, drv := fakeDriver(fake.Options{})
	var out bytes.Buffer
	err := Run(context.Background(), cfg, Options{Type: "huge", Driver: drv, RunnerBinary: fakeRunner(t)}, &out)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "use one of the config's: small, medium, large") {
		t.Fatalf("Run: %v, want a UsageError naming the types", err)
	}
	if st := ct.Stats(); st.Creates != 0 {
		t.Errorf("a create was attempted: %+v", st)
	}
}

// --type picks the type created; the default is the cheapest.
func TestTypeChoice(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{{"", "small"}, {"large", "large"}} {
		cfg := testConfig(t, "fake")
		_, drv := fakeDriver(fake.Options{})
		var created string
		var out bytes.Buffer
		err := Run(context.Background(), cfg, Options{
			Type: tc.flag, Driver: drv, RunnerBinary: fakeRunner(t), Poll: 10 * time.Millisecond,
			BeforeStep: func(step string, inst cloud.Instance) {
				if step == StepListed {
					created = inst.Tags()[cloud.TagInstanceType]
				}
			},
		}, &out)
		if err != nil || created != tc.want {
			t.Errorf("--type %q: created %q, err %v, want %q\n%s", tc.flag, created, err, tc.want, &out)
		}
	}
}

// lossySet hands out instances whose first Destroy gets through but
// whose reply is lost to an interrupt, and whose later Destroys fail as
// a provider's do for an instance already gone.
type lossySet struct {
	cloud.InstanceSet
	cancel    context.CancelFunc
	mu        sync.Mutex
	destroyed map[cloud.InstanceID]bool
}

type lossyInstance struct {
	cloud.Instance
	s *lossySet
}

func (s *lossySet) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	inst, err := s.InstanceSet.Create(ctx, it, tags)
	if err != nil {
		return nil, err
	}
	return &lossyInstance{inst, s}, nil
}

func (s *lossySet) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	insts, err := s.InstanceSet.Instances(ctx, filter)
	for i := range insts {
		insts[i] = &lossyInstance{insts[i], s}
	}
	return insts, err
}

func (i *lossyInstance) Destroy(ctx context.Context) error {
	i.s.mu.Lock()
	again := i.s.destroyed[i.ID()]
	i.s.destroyed[i.ID()] = true
	i.s.mu.Unlock()
	if again {
		return errors.New("no such instance " + string(i.ID()))
	}
	if err := i.Instance.Destroy(ctx); err != nil {
		return err
	}
	i.s.cancel()
	return context.Canceled
}

// An interrupt that cuts off the destroy step's reply after the destroy
// got through: cleanup sees the instance gone, although destroying it
// again fails.
func TestInterruptDuringDestroy(t *testing.T) {
	cfg := testConfig(t, "fake")
	ct, drv := fakeDriver(fake.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	drv.Set = &lossySet{InstanceSet: drv.Set, cancel: cancel, destroyed: map[cloud.InstanceID]bool{}}
	var out bytes.Buffer
	err := Run(ctx, cfg, Options{
		Driver: drv, RunnerBinary: fakeRunner(t), Poll: 10 * time.Millisecond,
		Steps: StepTimeouts{Cleanup: 2 * time.Second},
	}, &out)
	checkInterrupted(t, err, StepDestroy, out.String())
	if live := ct.Live(); len(live) != 0 {
		t.Errorf("instances left: %v", live)
	}
}
