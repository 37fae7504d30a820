// The demo's config and the sample workload fed to the engine.

package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
)

// shorten sets the timeouts that make a whole instance life cycle (boot,
// probe, run, idle, shutdown) show within a minute.
func shorten(cfg *config.Config) {
	cfg.Cloud.Local.BootDelay = min(cfg.Cloud.Local.BootDelay, time.Second)
	cfg.Cloud.TimeoutIdle = 5 * time.Second
	cfg.Cloud.ProbeInterval = time.Second
	cfg.Cloud.SyncInterval = 5 * time.Second
	cfg.Cloud.MaxConcurrentCreates = max(cfg.Cloud.MaxConcurrentCreates, 4)
}

// DemoMaxInstances caps the demonstration's pool: enough to show packing
// and a queue, few enough for a laptop.
const DemoMaxInstances = 8

// DemoConfig returns a copy of base set up for a demonstration whose state
// lives in dir: the local driver (real processes over SSH on this
// machine), boot_delay 1s, short timeouts and at most DemoMaxInstances
// instances.
func DemoConfig(base *config.Config, dir string) *config.Config {
	cfg := *base
	cfg.Dispatcher.StateDir = dir
	cfg.Dispatcher.MaxInstances = min(cfg.Dispatcher.MaxInstances, DemoMaxInstances)
	cfg.Cloud.Driver = "local"
	cfg.Cloud.Local.BootDelay = time.Second
	cfg.Cloud.RunnerPath = filepath.Join(dir, "dispatch-tui-runner")
	shorten(&cfg)
	return &cfg
}

// FeedOptions configure Feed.
type FeedOptions struct {
	// Rate is how many containers a second to submit (default 2).
	Rate float64
	// MaxQueued bounds the queue (Queued and Locked): the more are
	// waiting, the fewer are submitted, none at MaxQueued (default 8).
	// The queue so settles where submissions match what the pool runs,
	// instead of filling up to the cap and staying there.
	MaxQueued int
	// Real submits `sh -c 'sleep N; exit C'` commands (local and sshhosts
	// drivers); otherwise the fake driver's simulated commands.
	Real bool
	// Seed seeds the workload (0 = from the time).
	Seed uint64
	// Actor records the submissions (default "demo").
	Actor string
}

// Feed submits a steady sample workload to eng until ctx ends, then
// returns nil; it returns an error only if a submission is refused.
// Containers are mostly short (1-6s) with some long ones (20-60s), about
// one in ten exits 1, and one in seven needs the biggest configured type.
func Feed(ctx context.Context, eng *engine.Engine, opts FeedOptions) error {
	if opts.Rate <= 0 {
		opts.Rate = 2
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = 8
	}
	if opts.Actor == "" {
		opts.Actor = "demo"
	}
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	types := eng.Config().InstanceTypes
	tick := time.NewTicker(time.Duration(float64(time.Second) / opts.Rate))
	defer tick.Stop()
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		s := eng.Summary()
		if rng.Float64() >= submitChance(s.Containers[queue.Queued]+s.Containers[queue.Locked], opts.MaxQueued) {
			continue
		}
		spec := DemoSpec(rng, i, types, opts.Real)
		if _, err := eng.Submit(spec, opts.Actor); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("submit demo container %d: %w", i, err)
		}
		i++
	}
}

// submitChance is the chance of a submission at a tick with depth
// containers waiting: 1 on an empty queue, falling to 0 at max. Where it
// meets the pool's pace the queue holds steady, a few deep on a busy pool
// and near empty on an idle one.
func submitChance(depth, max int) float64 {
	if depth >= max {
		return 0
	}
	return 1 - float64(depth)/float64(max)
}

// DemoSpec is the i-th container of the demonstration workload: like the
// simulation's sample (short, ~10% failing, every 7th sized for the
// biggest type) with one in five running 20-60s instead.
func DemoSpec(rng *rand.Rand, i int, types []cloud.InstanceType, real bool) queue.Spec {
	spec := sampleSpec(rng, i, types, real)
	spec.Name = fmt.Sprintf("demo-%05d", i)
	if rng.IntN(5) != 0 {
		return spec
	}
	d := time.Duration(20+rng.IntN(41)) * time.Second
	code := 0
	if rng.IntN(10) == 0 {
		code = 1
	}
	spec.Name = fmt.Sprintf("demo-long-%05d", i)
	spec.Command = fake.Cmd(d, code)
	if real {
		spec.Command = []string{"sh", "-c", fmt.Sprintf("echo demo %d; sleep %d; exit %d", i, int(d.Seconds()), code)}
	}
	return spec
}
