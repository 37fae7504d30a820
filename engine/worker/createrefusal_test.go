package worker

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
)

// TestCreateRefusalIsCreatesAnswer: in each state that refuses a create
// (max_instances, creates in flight, a capacity back-off, a rate limit,
// the cloud-op bucket empty, the provider's quota and its probe),
// CreateRefusal answers what Create then does, and asking it takes
// nothing Create needs: a scheduler skips a pass at quota on its word
// (scheduler.Quiet).
func TestCreateRefusalIsCreatesAnswer(t *testing.T) {
	t.Parallel()
	// ask checks CreateRefusal, asked twice, against Create's answer.
	ask := func(t *testing.T, h *harness, typ string) error {
		t.Helper()
		said := h.pool.CreateRefusal(typ)
		if again := h.pool.CreateRefusal(typ); !sameAnswer(said, again) {
			t.Fatalf("at %s CreateRefusal(%s) said %v, then %v", h.clk.Now().Format(time.TimeOnly), typ, said, again)
		}
		got := h.pool.Create(typ)
		if !sameAnswer(said, got) {
			t.Fatalf("at %s CreateRefusal(%s) said %v, Create answered %v", h.clk.Now().Format(time.TimeOnly), typ, said, got)
		}
		return got
	}
	t.Run("max_instances and creates in flight", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, hopt{cfg: func(c *config.Config) {
			c.Dispatcher.MaxInstances = 2
			c.Cloud.MaxConcurrentCreates = 1
		}})
		h.step()
		h.set.gate = make(chan struct{})
		if err := ask(t, h, "small"); err != nil {
			t.Fatal(err)
		}
		if err := ask(t, h, "small"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("with a create in flight: %v, want %v", err, ErrThrottled)
		}
		close(h.set.gate)
		h.pool.Wait()
		if err := ask(t, h, "large"); err != nil {
			t.Fatal(err)
		}
		h.pool.Wait()
		if err := ask(t, h, "small"); !errors.Is(err, ErrAtQuota) {
			t.Fatalf("at max_instances: %v, want %v", err, ErrAtQuota)
		}
	})
	t.Run("capacity back-off", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, hopt{pool: func(o *Options) { o.CapacityBackoff = 2 * time.Minute }})
		h.step()
		h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes["s1"] = true })
		if err := ask(t, h, "small"); err != nil {
			t.Fatal(err)
		}
		h.pool.Wait()
		h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes["s1"] = false })
		var cb *CapacityBlockedError
		if err := ask(t, h, "small"); !errors.As(err, &cb) {
			t.Fatalf("in the back-off: %v", err)
		}
		h.run(2 * time.Minute)
		if err := ask(t, h, "small"); err != nil {
			t.Fatalf("after the back-off: %v", err)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, hopt{})
		h.step()
		h.drv.Configure(func(f *fake.Faults) { f.RateLimitedUntil = h.clk.Now().Add(time.Minute) })
		if err := ask(t, h, "small"); err != nil {
			t.Fatal(err)
		}
		h.pool.Wait()
		if err := ask(t, h, "small"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("paused by a rate limit: %v, want %v", err, ErrThrottled)
		}
		h.drv.Configure(func(f *fake.Faults) { f.RateLimitedUntil = h.clk.Now() })
		h.clk.Advance(time.Minute)
		if err := ask(t, h, "small"); err != nil {
			t.Fatalf("after the pause: %v", err)
		}
	})
	t.Run("cloud-op bucket", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, hopt{cfg: func(c *config.Config) { c.Cloud.MaxCloudOpsPerSecond = 2 }})
		h.step()
		h.clk.Advance(time.Second) // the bucket full again after the listing
		n := 0
		for ask(t, h, "small") == nil {
			if n++; n > 10 {
				t.Fatal("10 creates in a second at max_cloud_ops_per_second 2")
			}
		}
		if n == 0 {
			t.Fatal("no create went out: the test shows nothing")
		}
		h.clk.Advance(time.Second)
		if err := ask(t, h, "small"); err != nil {
			t.Fatalf("a second later: %v", err)
		}
	})
	t.Run("provider quota and its probe", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, hopt{drv: func(o *fake.Options) { o.Quota = 1 }, pool: func(o *Options) { o.QuotaProbeAfter = time.Minute }})
		h.step()
		for range 2 {
			if err := ask(t, h, "small"); err != nil {
				t.Fatal(err)
			}
			h.pool.Wait()
		}
		if err := ask(t, h, "small"); !errors.Is(err, ErrAtQuota) {
			t.Fatalf("after the provider's quota error: %v, want %v", err, ErrAtQuota)
		}
		h.clk.Advance(time.Minute)
		if err := ask(t, h, "small"); err != nil {
			t.Fatalf("the quota probe: %v", err)
		}
	})
}

// sameAnswer reports whether two answers of Create are the same refusal
// (or both none).
func sameAnswer(a, b error) bool {
	return a == b || a != nil && b != nil && reflect.TypeOf(a) == reflect.TypeOf(b) && a.Error() == b.Error()
}
