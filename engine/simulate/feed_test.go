package simulate

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
)

func TestDemoConfig(t *testing.T) {
	base := config.Default()
	cfg := DemoConfig(base, "/tmp/x")
	if cfg.Cloud.Driver != "local" || cfg.Dispatcher.StateDir != "/tmp/x" || cfg.Cloud.Local.BootDelay != time.Second ||
		cfg.Dispatcher.MaxInstances > DemoMaxInstances || cfg.Cloud.TimeoutIdle != 5*time.Second ||
		!strings.HasPrefix(cfg.Cloud.RunnerPath, "/tmp/x/") {
		t.Errorf("DemoConfig = %+v", cfg)
	}
	if base.Dispatcher.StateDir == "/tmp/x" {
		t.Error("base changed")
	}
}

func TestDemoSpec(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := config.DefaultInstanceTypes()
	var long, failing, big int
	const n = 2000
	for i := range n {
		s := DemoSpec(rng, i, types, true)
		if err := queue.ValidateSpec(&s); err != nil {
			t.Fatal(err)
		}
		if len(s.Command) != 3 || s.Command[0] != "sh" {
			t.Fatalf("command %q", s.Command)
		}
		if strings.HasPrefix(s.Name, "demo-long-") {
			long++
		}
		if strings.HasSuffix(s.Command[2], "exit 1") {
			failing++
		}
		if s.RuntimeConstraints.VCPUs == types[len(types)-1].VCPUs {
			big++
		}
	}
	for what, got := range map[string]int{"long": long, "failing": failing, "big": big} {
		if got < n/20 || got > n/3 {
			t.Errorf("%d of %d are %s", got, n, what)
		}
	}
}

// TestFeed runs on synctest's clock: a second of feeding at 500 a second is
// 500 ticks, far past the 15 the cap allows, in no wall time.
func TestFeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.Default()
		cfg.Dispatcher.StateDir = t.TempDir()
		cfg.Cloud.Driver = "fake"
		clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		ct := fake.New(fake.Options{Clock: clk})
		eng, err := engine.New(engine.Options{Config: cfg, InstanceSet: ct, NewExecutor: ct.Executor, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- Feed(ctx, eng, FeedOptions{Rate: 500, MaxQueued: 15, Seed: 3}) }()
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		cs, n := eng.Containers(engine.ListOptions{})
		if n != 15 {
			t.Errorf("%d containers submitted, want 15 (the MaxQueued cap)", n)
		}
		for _, c := range cs {
			if c.Command[0] != fake.CmdName {
				t.Errorf("container %s runs %q, want a fake driver command", c.ID, c.Command)
			}
		}
	})
}

// The demo's queue settles: fed at 2 a second by submitChance into a pool
// that runs about 1.5 a second, its depth holds a few deep (as the
// README's picture) instead of sitting at the cap.
func TestFeedSettles(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const max, ticks = 12, 4000 // a tick is half a second
	depth, sum, n, atCap := 0, 0, 0, 0
	for i := range ticks {
		if rng.Float64() < submitChance(depth, max) {
			depth++
		}
		if depth > 0 && rng.Float64() < 0.75 { // 1.5 a second started
			depth--
		}
		if i >= ticks/2 {
			sum += depth
			n++
			if depth >= max {
				atCap++
			}
		}
	}
	mean := float64(sum) / float64(n)
	if mean < 1 || mean > max/2 || atCap > n/100 {
		t.Errorf("mean depth %.1f, %d of %d ticks at the cap %d: want a steady few", mean, atCap, n, max)
	}
	for _, tc := range []struct {
		depth int
		want  float64
	}{{0, 1}, {6, 0.5}, {12, 0}, {20, 0}} {
		if got := submitChance(tc.depth, max); got != tc.want {
			t.Errorf("submitChance(%d, %d) = %v, want %v", tc.depth, max, got, tc.want)
		}
	}
}
