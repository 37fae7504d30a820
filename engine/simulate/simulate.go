// Package simulate runs the engine headless with a sample workload and
// prints its progress: on the local driver (real processes over real SSH)
// or the in-memory fake driver. It is how a newcomer sees the
// scheduler and worker pool work with nothing installed.
package simulate

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// Options for Run.
type Options struct {
	Config     *config.Config
	Containers int           // sample containers to submit
	Timeout    time.Duration // stop even if work remains
	Quota      int           // cloud quota (0 = unlimited)
	Seed       uint64
	Out        io.Writer
	// Driver is "fake" (in-memory, with injected create errors) or
	// "local" (real processes over real SSH, this binary as the runner).
	Driver string
}

// Run submits the sample workload and steps the engine until every
// container is final and idle instances are gone, or the timeout.
func Run(ctx context.Context, opts Options) error {
	cfg := *opts.Config
	dir, err := os.MkdirTemp("", "dispatch-tui-simulate-")
	if err != nil {
		return fmt.Errorf("create simulation state dir: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg.Dispatcher.StateDir = dir
	cfg.Cloud.Driver = "fake"
	shorten(&cfg)

	var eng *engine.Engine
	switch opts.Driver {
	case "local":
		cfg.Cloud.Driver = "local"
		cfg.Dispatcher.MaxInstances = max(opts.Quota, 1)
		cfg.Cloud.RunnerPath = filepath.Join(dir, "dispatch-tui-runner")
		r, err := launch.New(launch.Options{Config: &cfg})
		if err != nil {
			return err
		}
		defer func() {
			// Leave nothing behind: destroy what is left (kills containers).
			insts, _ := r.Driver.Instances(context.Background(), nil)
			for _, i := range insts {
				i.Destroy(context.Background())
			}
			r.Close()
		}()
		eng = r.Engine
	case "fake", "":
		ct := fake.New(fake.Options{
			Clock: clock.Real{}, Seed: int64(opts.Seed), Quota: opts.Quota,
			BootDelay: cfg.Cloud.Local.BootDelay, CreateErrorRate: 0.05,
		})
		e, err := engine.New(engine.Options{Config: &cfg, InstanceSet: ct, NewExecutor: ct.Executor, PassInterval: 250 * time.Millisecond})
		if err != nil {
			return err
		}
		defer e.Close()
		eng = e
	default:
		return fmt.Errorf("unknown driver %q (fake or local)", opts.Driver)
	}

	rng := rand.New(rand.NewPCG(opts.Seed, 7))
	for i := 0; i < opts.Containers; i++ {
		spec := sampleSpec(rng, i, cfg.InstanceTypes, opts.Driver == "local")
		if _, err := eng.Submit(spec, "simulate"); err != nil {
			return fmt.Errorf("submit sample container %d: %w", i, err)
		}
	}
	fmt.Fprintf(opts.Out, "running %d sample containers on %d instance types (%s driver, quota %s); Ctrl-C stops\n",
		opts.Containers, len(cfg.InstanceTypes), cfg.Cloud.Driver, quotaText(opts.Quota))

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	go eng.Run(ctx)
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(opts.Out, line(eng, time.Since(start)))
			return fmt.Errorf("simulation stopped after %s with work left", time.Since(start).Round(time.Second))
		case <-tick.C:
		}
		fmt.Fprintln(opts.Out, line(eng, time.Since(start)))
		sum := eng.Summary()
		if sum.Containers[queue.Queued]+sum.Containers[queue.Locked]+sum.Containers[queue.Running] == 0 && len(eng.Instances()) == 0 {
			fmt.Fprintf(opts.Out, "done: every container final, every instance shut down (%s)\n", time.Since(start).Round(time.Second))
			return nil
		}
	}
}

func quotaText(q int) string {
	if q == 0 {
		return "unlimited"
	}
	return fmt.Sprint(q)
}

// sampleSpec: mostly short small containers, some longer, some failing,
// a few needing a bigger type.
func sampleSpec(rng *rand.Rand, i int, types []cloud.InstanceType, real bool) queue.Spec {
	d := time.Duration(1+rng.IntN(6)) * time.Second
	code := 0
	if rng.IntN(10) == 0 {
		code = 1
	}
	rc := queue.Constraints{VCPUs: 1, RAM: 256 << 20}
	if i%7 == 0 && len(types) > 1 {
		big := types[len(types)-1]
		rc = queue.Constraints{VCPUs: big.VCPUs, RAM: big.RAM / 2}
	}
	prio := 1 + rng.IntN(3)
	cmd := fake.Cmd(d, code)
	if real {
		cmd = []string{"sh", "-c", fmt.Sprintf("echo sample %d; sleep %d; exit %d", i, int(d.Seconds()), code)}
	}
	return queue.Spec{Name: fmt.Sprintf("sample-%03d", i), Command: cmd, RuntimeConstraints: rc, Priority: &prio}
}

func line(eng *engine.Engine, elapsed time.Duration) string {
	s := eng.Summary()
	var b strings.Builder
	fmt.Fprintf(&b, "%5s  instances:", elapsed.Round(time.Second))
	for _, st := range []worker.State{worker.StateBooting, worker.StateIdle, worker.StateRunning, worker.StateShutdown} {
		fmt.Fprintf(&b, " %s %d", st, s.Instances[st])
	}
	b.WriteString("  containers:")
	for _, st := range queue.States {
		fmt.Fprintf(&b, " %s %d", st, s.Containers[st])
	}
	fmt.Fprintf(&b, "  $%.2f/h", s.PricePerHour)
	if s.AtQuota {
		b.WriteString("  AT QUOTA")
	}
	return b.String()
}
