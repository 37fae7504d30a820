package worker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/runner"
)

const noticeCmd = "read-the-notice"

// noticeSet is a provider that posts interruption notices on its
// instances, as EC2 does for spot instances: instances of provider type
// "l1" have the notice command, others none.
type noticeSet struct {
	cloud.InstanceSet
	mu     sync.Mutex
	posted map[cloud.InstanceID]string // the command's output
	reads  map[cloud.InstanceID]int
}

type noticeInst struct{ cloud.Instance }

func (i noticeInst) NoticeCommand() string {
	if i.ProviderType() != "l1" {
		return ""
	}
	return noticeCmd
}

func (i noticeInst) ParseNotice(out []byte) (string, time.Time, bool) {
	action, at, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok {
		return "", time.Time{}, false
	}
	t, _ := time.Parse(time.RFC3339, at)
	return "notice: " + action, t, true
}

func (s *noticeSet) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	inst, err := s.InstanceSet.Create(ctx, it, tags)
	if err != nil {
		return nil, err
	}
	return noticeInst{inst}, nil
}

func (s *noticeSet) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	l, err := s.InstanceSet.Instances(ctx, filter)
	for i := range l {
		l[i] = noticeInst{l[i]}
	}
	return l, err
}

// noticeExec answers the notice command with what the set posted.
type noticeExec struct {
	runner.Executor
	s  *noticeSet
	id cloud.InstanceID
}

func (e noticeExec) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	if cmd != noticeCmd {
		return e.Executor.Execute(ctx, cmd, stdin)
	}
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.s.reads[e.id]++
	return []byte(e.s.posted[e.id]), nil, nil
}

func (s *noticeSet) readsOf(id cloud.InstanceID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[id]
}

// A notice read with a probe drains the instance at once: nothing new is
// placed there, its running container goes on, and once that ends the
// instance is shut down. The listing is asked for at the announced time.
// An instance without a notice command (on demand) is never asked.
func TestInterruptionNoticeDrains(t *testing.T) {
	h := newHarness(t, hopt{cfg: func(c *config.Config) {
		c.Cloud.TimeoutIdle = time.Hour
		c.Cloud.SyncInterval = 10 * time.Minute
	}})
	set := &noticeSet{InstanceSet: h.drv, posted: map[cloud.InstanceID]string{}, reads: map[cloud.InstanceID]int{}}
	h.pool = h.newPool(func(o *Options) {
		o.InstanceSet = set
		o.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
			x, err := h.drv.Executor(inst)
			return noticeExec{Executor: x, s: set, id: inst.ID()}, err
		}
	})
	h.step()
	spotID := h.createIdle("large")
	onDemandID := h.createIdle("small")
	h.run(30 * time.Second)
	if n := set.readsOf(spotID); n == 0 {
		t.Fatalf("the notice of %s was never read", spotID)
	}
	if n := set.readsOf(onDemandID); n != 0 {
		t.Fatalf("an instance without a notice command was asked %d times", n)
	}
	if err := h.pool.StartContainer(spotID, runner.Spec{ID: "c1", Command: []string{"sleep", "3600"}}); err != nil {
		t.Fatal(err)
	}
	h.until("c1 running", time.Minute, func() bool { return h.state(spotID) == StateRunning })

	at := h.clk.Now().Add(2 * time.Minute)
	set.mu.Lock()
	set.posted[spotID] = "terminate " + at.UTC().Format(time.RFC3339)
	set.mu.Unlock()
	h.until("the notice seen", time.Minute, func() bool { return h.hasEvent(spotID, EventPreempted, "notice: terminate") })
	v, _ := h.pool.Instance(spotID)
	if v.IdleBehavior != IdleDrain || v.State != StateRunning {
		t.Fatalf("after the notice: %s %s, want running and drained:%s", v.State, v.IdleBehavior, h.dump())
	}
	if err := h.pool.StartContainer(spotID, runner.Spec{ID: "c2", Command: []string{"true"}}); err == nil {
		t.Fatalf("a container was started on a drained instance:%s", h.dump())
	}
	reads := set.readsOf(spotID)
	listings := h.drv.Stats().Lists
	h.run(time.Minute)
	if n := set.readsOf(spotID); n != reads {
		t.Errorf("the notice was read %d more times after it was seen", n-reads)
	}
	if n := h.drv.Stats().Lists; n != listings {
		t.Errorf("%d listings before the announced time (sync interval 10m)", n-listings)
	}
	h.run(time.Minute + noticeSyncDelay)
	if n := h.drv.Stats().Lists; n == listings {
		t.Errorf("no listing at the announced time")
	}
}
