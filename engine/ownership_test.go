package engine

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// Two dispatchers (own state dirs, so own cluster ids) share one cloud
// account: each runs its 50 containers exactly once, to completion, on
// instances it created, and neither lists, kills or destroys the other's.
func TestTwoDispatchersShareOneCloud(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	drv := fake.New(fake.Options{Clock: clk, BootDelay: 3 * time.Second})
	type side struct {
		eng  *Engine
		ids  []string
		seen map[string]bool // instances this engine ever showed
	}
	var sides []*side
	for range 2 {
		cfg := testConfig(t)
		cfg.Dispatcher.MaxInstances = 10
		cfg.Cloud.TimeoutIdle = 3 * time.Second // instances come and go while the other works
		eng, err := New(Options{Config: cfg, InstanceSet: drv, NewExecutor: drv.Executor, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		sides = append(sides, &side{eng: eng, seen: map[string]bool{}})
	}
	if sides[0].eng.ClusterID() == sides[1].eng.ClusterID() {
		t.Fatalf("both dispatchers have cluster id %s", sides[0].eng.ClusterID())
	}
	for _, s := range sides {
		for i := range 50 {
			c, err := s.eng.Submit(queue.Spec{
				Command:            fake.Cmd(time.Duration(2+i%5)*time.Second, 0),
				RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2},
			}, "test")
			if err != nil {
				t.Fatal(err)
			}
			s.ids = append(s.ids, c.ID)
		}
	}
	done := func() bool {
		for _, s := range sides {
			for _, id := range s.ids {
				if c, _ := s.eng.Container(id); !c.State.Final() {
					return false
				}
			}
		}
		return true
	}
	for step := 0; !done(); step++ {
		if step > 600 {
			t.Fatalf("not all containers finished after %d steps", step)
		}
		for _, s := range sides {
			s.eng.Step()
			s.eng.Settle()
			for _, v := range s.eng.Instances() {
				if v.State != worker.StateForeign { // the other's, shown as such
					s.seen[string(v.ID)] = true
				}
			}
		}
		clk.Advance(time.Second)
	}
	for i, s := range sides {
		for _, id := range s.ids {
			c, _ := s.eng.Container(id)
			if c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 || c.Attempts != 1 {
				t.Errorf("dispatcher %d: container %s: %s exit=%s attempts=%d reason=%q", i, id, c.State, exitOf(c), c.Attempts, c.Reason)
			}
			if n := drv.StartCount(id); n != 1 {
				t.Errorf("dispatcher %d: container %s started %d times: %v", i, id, n, drv.Starts(id))
			}
		}
		for id := range s.seen {
			inst, ok := drv.Instance(cloud.InstanceID(id))
			if ok && inst.Tags()[cloud.TagOwner] != s.eng.ClusterID() {
				t.Errorf("dispatcher %d (%s) showed instance %s owned by %q", i, s.eng.ClusterID(), id, inst.Tags()[cloud.TagOwner])
			}
		}
	}
	if k := drv.Stats().Kills; k != 0 {
		t.Errorf("%d runner kills: no container should have been killed", k)
	}
}

// A container ended by a signal nobody in the dispatcher sent is not a
// completion: it runs again (the attempt counts), and with no attempts left
// it ends Cancelled KILLED_EXTERNALLY. A command that exits 143 by itself
// does complete.
func TestContainerKilledFromOutside(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	victim := h.submit(-1, 0, maxAttempts(2))
	selfExit := h.submit(5*time.Second, fake.ExitTerm)

	for attempt := 1; attempt <= 2; attempt++ {
		inst := h.runningOn(victim, 60)
		if c := h.container(victim); c.Attempts != attempt {
			t.Fatalf("attempt %d: container has attempts=%d", attempt, c.Attempts)
		}
		h.cloud.SignalContainer(cloud.InstanceID(inst), victim, runner.SignalTerm)
		if attempt == 1 {
			h.until("victim requeued and running again", 60, func() bool {
				c := h.container(victim)
				return c.Attempts == 2 && c.State == queue.Running
			})
		}
	}
	h.until("victim cancelled", 60, func() bool { return h.state(victim).Final() })
	c := h.container(victim)
	if c.State != queue.Cancelled || c.ReasonCode != queue.ReasonKilledExternally || c.Attempts != 2 {
		t.Fatalf("victim: %s %s %q attempts=%d, want Cancelled KILLED_EXTERNALLY after 2 attempts", c.State, c.ReasonCode, c.Reason, c.Attempts)
	}
	if want := "killed by signal TERM from outside the dispatcher"; !contains(c.Reason, want) {
		t.Fatalf("victim reason %q does not say %q", c.Reason, want)
	}
	if n := h.cloud.StartCount(victim); n != 2 {
		t.Fatalf("victim started %d times, want 2", n)
	}
	h.until("self-exiting container done", 60, func() bool { return h.state(selfExit).Final() })
	if c := h.container(selfExit); c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != fake.ExitTerm {
		t.Fatalf("a command exiting %d by itself: %s exit=%s %q, want Complete", fake.ExitTerm, c.State, exitOf(c), c.Reason)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func exitOf(c view.Container) string {
	if c.ExitCode == nil {
		return "-"
	}
	return strconv.Itoa(*c.ExitCode)
}

// Upgrade from the constant owner tag: the first start that makes up a
// cluster id in a state dir that already holds a store adopts instances
// tagged "dispatch-tui" and retags them; a fresh install leaves them alone.
func TestLegacyOwnerAdoptedOnceOnUpgrade(t *testing.T) {
	for _, upgrade := range []bool{true, false} {
		t.Run(map[bool]string{true: "upgrade", false: "fresh install"}[upgrade], func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			drv := fake.New(fake.Options{Clock: clk})
			legacy, err := drv.Create(t.Context(), testTypes[0], cloud.Tags{
				cloud.TagOwner: LegacyOwner, cloud.TagInstanceType: "small", cloud.TagIdleBehavior: "run",
			})
			if err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(t)
			cfg.Cloud.TimeoutIdle = time.Hour
			if upgrade { // an older version's store, and no cluster_id file
				st, err := boltstore.Open(boltstore.Options{Path: filepath.Join(cfg.Dispatcher.StateDir, StoreFile)})
				if err != nil {
					t.Fatal(err)
				}
				q, err := queue.Open(queue.Options{Store: st, Clock: clk})
				if err != nil {
					t.Fatal(err)
				}
				q.Close()
			}
			eng, err := New(Options{Config: cfg, InstanceSet: drv, NewExecutor: drv.Executor, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			for range 10 {
				eng.Step()
				eng.Settle()
				clk.Advance(time.Second)
			}
			_, adopted := eng.pool.Instance(legacy.ID())
			now, _ := drv.Instance(legacy.ID())
			owner := now.Tags()[cloud.TagOwner]
			if upgrade && (!adopted || owner != eng.ClusterID()) {
				t.Fatalf("upgrade: adopted %v, owner tag %q; want adopted and retagged %s", adopted, owner, eng.ClusterID())
			}
			if !upgrade && (adopted || owner != LegacyOwner) {
				t.Fatalf("fresh install: adopted %v, owner tag %q; want the legacy instance left alone", adopted, owner)
			}
			if v, _ := eng.Instance(string(legacy.ID())); !upgrade && (v.State != worker.StateForeign || v.LastError != "owned by "+LegacyOwner) {
				t.Fatalf("fresh install: the legacy instance shows as %+v, want foreign, owned by %s", v, LegacyOwner)
			}
		})
	}
}
