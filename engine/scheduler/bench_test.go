package scheduler

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// staticPool is a Pool whose instances do not change: what a pass sees in
// steady state. Instances copies like the real pool does.
type staticPool struct {
	views []worker.InstanceView
	quota int
}

func (p *staticPool) Instances(buf []worker.InstanceView) []worker.InstanceView {
	buf = buf[:0]
	for _, v := range p.views {
		v.Containers = append([]string(nil), v.Containers...)
		v.Reported = append([]runner.Status(nil), v.Reported...)
		buf = append(buf, v)
	}
	return buf
}
func (p *staticPool) Ready() bool                                        { return true }
func (p *staticPool) Create(string) error                                { return worker.ErrAtQuota }
func (p *staticPool) StartContainer(cloud.InstanceID, runner.Spec) error { return nil }
func (p *staticPool) KillContainer(cloud.InstanceID, string) bool        { return false }
func (p *staticPool) ForgetContainer(cloud.InstanceID, string)           {}
func (p *staticPool) TakeStartFailures() []worker.StartFailure           { return nil }
func (p *staticPool) BootFailing(string) string                          { return "" }
func (p *staticPool) Shutdown(cloud.InstanceID, string) bool             { return false }
func (p *staticPool) Quota() (int, bool)                                 { return p.quota, true }

var benchTypes = []cloud.InstanceType{
	{Name: "small", ProviderType: "small", VCPUs: 1, RAM: 2 << 30, Scratch: 20 << 30, Price: 0.02},
	{Name: "medium", ProviderType: "medium", VCPUs: 4, RAM: 8 << 30, Scratch: 50 << 30, Price: 0.08},
	{Name: "large", ProviderType: "large", VCPUs: 16, RAM: 64 << 30, Scratch: 200 << 30, Price: 0.50},
	{Name: "gpu", ProviderType: "gpu", VCPUs: 8, RAM: 64 << 30, Scratch: 200 << 30, GPUs: 1, Price: 1.20},
}

// shape i of the container mix: mostly small, some medium and large, a few GPU.
func benchShape(i int) queue.Constraints {
	switch i % 20 {
	case 0, 1, 2:
		return queue.Constraints{VCPUs: 4, RAM: 6 << 30}
	case 3:
		return queue.Constraints{VCPUs: 12, RAM: 48 << 30}
	case 4:
		return queue.Constraints{VCPUs: 4, RAM: 16 << 30, GPUs: 1}
	}
	return queue.Constraints{VCPUs: 1, RAM: 1 << 30}
}

// benchSetup builds a queue with `queued` waiting containers and a pool of
// `instances` instances: 70% running one container each, 10% idle held, 5%
// draining with a container, 10% booting (with Locked containers waiting),
// 5% unknown. The cloud is at quota, so most of the queue waits.
func benchSetup(b *testing.B, queued, instances int) (*Scheduler, *queue.Queue) {
	return benchSetupWith(b, queued, instances, benchTypes, nil)
}

// benchSetupWith is benchSetup with the given types, and spec called on
// each container's spec before it is submitted (nil: none).
func benchSetupWith(b *testing.B, queued, instances int, types []cloud.InstanceType, spec func(i int, s *queue.Spec)) (*Scheduler, *queue.Queue) {
	b.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q, err := queue.Open(queue.Options{Path: filepath.Join(b.TempDir(), "q.db"), Clock: clk, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	cfg := config.Default()
	cfg.InstanceTypes = types
	cfg.Dispatcher.MaxInstances = instances

	nRunning := instances * 75 / 100
	total := queued + nRunning
	specs := make([]queue.Spec, total)
	for i := range specs {
		prio := 1 + i%5
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: benchShape(i), Priority: &prio}
		if spec != nil {
			spec(i, &specs[i])
		}
	}
	var all []queue.Container
	for i := 0; i < total; i += 10000 {
		cs, err := q.SubmitBatch(specs[i:min(total, i+10000)], "bench")
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, cs...)
	}
	pool := &staticPool{quota: instances}
	ci := 0
	typeFor := func(rc queue.Constraints) cloud.InstanceType {
		f := ComputeFit(benchTypes, rc, cfg.Dispatcher.ReserveExtraRAM, cfg.Dispatcher.MaxPriceFactor)
		return benchTypes[f.Candidates[0]]
	}
	err = q.Pass(func(tx *queue.Tx) {
		for i := 0; i < instances; i++ {
			id := cloud.InstanceID(fmt.Sprintf("i-%05d", i))
			v := worker.InstanceView{ID: id, State: worker.StateRunning, IdleBehavior: worker.IdleRun, ListedAt: clk.Now().Add(-time.Second)}
			switch {
			case i < instances*70/100, i >= instances*70/100 && i < instances*75/100:
				c := tx.Get(all[ci].ID)
				ci++
				t := typeFor(c.RuntimeConstraints)
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				if i >= instances*70/100 {
					v.IdleBehavior = worker.IdleDrain
				}
				if err := tx.Lock(c, t.Name); err != nil {
					b.Fatal(err)
				}
				if err := tx.Run(c, string(id), t.Name); err != nil {
					b.Fatal(err)
				}
				v.Containers = []string{c.ID}
				v.Reported = []runner.Status{{ID: c.ID, PID: 1000 + i, State: runner.StateRunning, StartedAt: c.StartedAt}}
			case i < instances*85/100:
				t := benchTypes[i%len(benchTypes)]
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				v.State, v.IdleBehavior = worker.StateIdle, worker.IdleHold
			case i < instances*95/100:
				t := benchTypes[i%len(benchTypes)]
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				v.State = worker.StateBooting
			default:
				t := benchTypes[i%len(benchTypes)]
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				v.State = worker.StateUnknown
			}
			pool.views = append(pool.views, v)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	s := New(cfg, q, pool, clk, nil)
	s.RunPass() // first pass locks containers for the booting instances
	return s, q
}

func BenchmarkSchedulerPass(b *testing.B) {
	for _, tc := range []struct{ queued, instances int }{
		{10000, 1000},
		{100000, 1000},
	} {
		b.Run(fmt.Sprintf("queued=%d/instances=%d", tc.queued, tc.instances), func(b *testing.B) {
			s, _ := benchSetup(b, tc.queued, tc.instances)
			b.ReportAllocs()
			b.ResetTimer()
			var st Stats
			for b.Loop() {
				st = s.RunPass()
			}
			b.StopTimer()
			if st.ByState[queue.Running] == 0 || st.AllocatedNotStart == 0 || !st.AtQuota {
				b.Fatalf("unrealistic pass: %+v", st)
			}
		})
	}
}
