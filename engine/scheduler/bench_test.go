package scheduler

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// staticPool is a Pool whose instances do not change unless live is set:
// what a pass sees in steady state. Instances copies like the real pool
// does (worker.Pool.Instances: one backing array each for the container
// lists and the reports). With live set, starts and forgets change the
// instances as a runner would, for the churn benchmark.
type staticPool struct {
	views []worker.InstanceView
	quota int
	live  bool
	byID  map[cloud.InstanceID]int
	gen   uint64
}

func (p *staticPool) Instances(buf []worker.InstanceView) []worker.InstanceView {
	buf = buf[:0]
	nc, nr := 0, 0
	for i := range p.views {
		nc += len(p.views[i].Containers)
		nr += len(p.views[i].Reported)
	}
	cs := make([]string, nc)
	rs := make([]runner.Status, nr)
	for _, v := range p.views {
		n := copy(cs, v.Containers)
		v.Containers, cs = cs[:n:n], cs[n:]
		n = copy(rs, v.Reported)
		v.Reported, rs = rs[:n:n], rs[n:]
		buf = append(buf, v)
	}
	return buf
}
func (p *staticPool) Ready() bool                { return true }
func (p *staticPool) Listed() bool               { return true }
func (p *staticPool) Create(string) error        { return worker.ErrAtQuota }
func (p *staticPool) CreateRefusal(string) error { return worker.ErrAtQuota }
func (p *staticPool) StartContainer(id cloud.InstanceID, spec runner.Spec) error {
	if p.live {
		v := &p.views[p.byID[id]]
		v.State = worker.StateRunning
		v.Containers = append(v.Containers, spec.ID)
		v.Reported = append(v.Reported, runner.Status{ID: spec.ID, PID: 1, State: runner.StateRunning, StartedAt: v.ListedAt})
	}
	return nil
}
func (p *staticPool) KillContainer(cloud.InstanceID, string) bool { return false }
func (p *staticPool) ForgetContainer(id cloud.InstanceID, containerID string) {
	if p.live {
		v := &p.views[p.byID[id]]
		v.Reported = slices.DeleteFunc(v.Reported, func(r runner.Status) bool { return r.ID == containerID })
	}
}
func (p *staticPool) TakeStartFailures() []worker.StartFailure { return nil }
func (p *staticPool) BootFailing(string) string                { return "" }

// Generation is new at every call, as a pool whose instances always
// changed: Quiet compares them.
func (p *staticPool) Generation() uint64 {
	p.gen++
	return p.gen
}
func (p *staticPool) Shutdown(cloud.InstanceID, string) bool { return false }
func (p *staticPool) Quota() (int, bool)                     { return p.quota, true }

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
	s, q, _ := benchSetupMix(b, queued, instances, false, benchTypes, nil)
	return s, q
}

// benchSetupWith is benchSetup with the given types, and spec called on
// each container's spec before it is submitted (nil: none).
func benchSetupWith(b *testing.B, queued, instances int, types []cloud.InstanceType, spec func(i int, s *queue.Spec)) (*Scheduler, *queue.Queue) {
	s, q, _ := benchSetupMix(b, queued, instances, false, types, spec)
	return s, q
}

// benchSetupMix is benchSetupWith; with allRunning, every instance instead
// runs one container and can take another once it ends (the churn
// benchmark's pool, which then changes with the starts and forgets).
func benchSetupMix(b *testing.B, queued, instances int, allRunning bool, types []cloud.InstanceType, spec func(i int, s *queue.Spec)) (*Scheduler, *queue.Queue, *staticPool) {
	b.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(b, clk)
	cfg := config.Default()
	cfg.InstanceTypes = types
	cfg.Dispatcher.MaxInstances = instances

	nRunning := instances * 75 / 100
	if allRunning {
		nRunning = instances
	}
	total := queued + nRunning
	specs := make([]queue.Spec, total)
	for i := range specs {
		prio := 1 + i%5
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: benchShape(i), Priority: &prio}
		if spec != nil {
			spec(i, &specs[i])
		}
	}
	var all []view.Container
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
		f := ComputeFit(types, rc, cfg.Dispatcher.ReserveExtraRAM, cfg.Dispatcher.MaxPriceFactor)
		return types[f.Candidates[0]]
	}
	err := q.Pass(func(tx *queue.Tx) {
		for i := 0; i < instances; i++ {
			id := cloud.InstanceID(fmt.Sprintf("i-%05d", i))
			v := worker.InstanceView{Instance: view.Instance{ID: id, State: worker.StateRunning, IdleBehavior: worker.IdleRun}, ListedAt: clk.Now().Add(-time.Second)}
			switch {
			case allRunning, i < instances*70/100, i >= instances*70/100 && i < instances*75/100:
				c := tx.Get(all[ci].ID)
				ci++
				t := typeFor(c.RuntimeConstraints)
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				if i >= instances*70/100 && !allRunning {
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
				t := types[i%len(types)]
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				v.State, v.IdleBehavior = worker.StateIdle, worker.IdleHold
			case i < instances*95/100:
				t := types[i%len(types)]
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				v.State = worker.StateBooting
			default:
				t := types[i%len(types)]
				v.Type, v.ProviderType, v.Price = t.Name, t.ProviderType, t.Price
				v.State = worker.StateUnknown
			}
			pool.views = append(pool.views, v)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	pool.live = allRunning
	pool.byID = map[cloud.InstanceID]int{}
	for i, v := range pool.views {
		pool.byID[v.ID] = i
	}
	s := New(cfg, q, pool, clk, nil)
	s.RunPass() // first pass locks containers for the booting instances
	return s, q, pool
}

func BenchmarkSchedulerPass(b *testing.B) {
	for _, tc := range []struct{ queued, instances int }{
		{10000, 1000},
		{100000, 1000},
		{1000000, 10000},
	} {
		b.Run(fmt.Sprintf("queued=%d/instances=%d", tc.queued, tc.instances), func(b *testing.B) {
			s, _ := benchSetup(b, tc.queued, tc.instances)
			b.ReportAllocs()
			b.ResetTimer()
			var st Stats
			cpu0 := cpuTime()
			for b.Loop() {
				st = s.RunPass()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if st.ByState[queue.Running] == 0 || st.AllocatedNotStart == 0 || !st.AtQuota {
				b.Fatalf("unrealistic pass: %+v", st)
			}
		})
	}
}

// churnTypes is the churn benchmark's one instance type, which every
// shape of benchShape fits: each idle instance can take the next container
// in the queue, so a pass starts as many as ended. (With benchTypes the
// instance types stop matching the head of the queue after a few passes,
// and the scheduler rightly frees idle instances for the containers ahead
// instead of starting on them — no priority inversion at quota — which the
// static pool cannot act on: starts fall to a third.)
var churnTypes = []cloud.InstanceType{
	{Name: "any", ProviderType: "any", VCPUs: 16, RAM: 64 << 30, Scratch: 200 << 30, GPUs: 1, Price: 1.20},
}

// churnExits is how many containers end before each churn pass (and how
// many are submitted): the pass records as many completions and starts.
const churnExits = 1000

// BenchmarkSchedulerPassChurn is the pass with steady churn, the one users
// pay for: before each pass 1 % of the queue is re-prioritised, churnExits
// containers are submitted and the containers of churnExits instances exit
// (each instance runs one), so the pass records churnExits completions and
// starts as many in their place. Only the pass is timed, after a
// collection of the churn's garbage.
func BenchmarkSchedulerPassChurn(b *testing.B) {
	for _, tc := range []struct{ queued, instances int }{
		{100000, 1000},
		{1000000, 10000},
	} {
		b.Run(fmt.Sprintf("queued=%d/instances=%d", tc.queued, tc.instances), func(b *testing.B) {
			s, q, pool := benchSetupMix(b, tc.queued, tc.instances, true, churnTypes, nil)
			rng := rand.New(rand.NewPCG(1, 2))
			var queuedIDs []string
			q.Each(func(c *queue.Container) bool {
				if c.State == queue.Queued {
					queuedIDs = append(queuedIDs, c.ID)
				}
				return true
			})
			var prioSpec []queue.Spec
			starts, completions, passes, next := 0, 0, 0, 0
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				// Re-prioritise 1 % of the containers not yet final (ids
				// that have ended are dropped from the list as found).
				for n := 0; n < tc.queued/100; {
					k := rng.IntN(len(queuedIDs))
					if c, ok := q.Get(queuedIDs[k]); !ok || c.State.Final() {
						queuedIDs[k] = queuedIDs[len(queuedIDs)-1]
						queuedIDs = queuedIDs[:len(queuedIDs)-1]
						continue
					}
					if _, err := q.SetPriority(queuedIDs[k], 1+rng.IntN(5), "bench", ""); err != nil {
						b.Fatal(err)
					}
					n++
				}
				prioSpec = prioSpec[:0]
				for i := range churnExits {
					prio := 1 + rng.IntN(5)
					prioSpec = append(prioSpec, queue.Spec{Command: []string{"true"}, RuntimeConstraints: benchShape(i), Priority: &prio})
				}
				cs, err := q.SubmitBatch(prioSpec, "bench")
				if err != nil {
					b.Fatal(err)
				}
				for _, c := range cs {
					queuedIDs = append(queuedIDs, c.ID)
				}
				// The containers of the next churnExits instances exit.
				for range churnExits {
					v := &pool.views[next]
					next = (next + 1) % len(pool.views)
					for j := range v.Reported {
						v.Reported[j].State = runner.StateExited
						v.Reported[j].FinishedAt = v.ListedAt
					}
					v.Containers = v.Containers[:0]
					v.State = worker.StateIdle
				}
				// The untimed churn above (1,000 SetPriority transactions, a
				// submit) leaves garbage; collect it here so that its
				// collection is not charged to the pass. What the pass itself
				// allocates is still collected in the timed window when it
				// triggers a cycle (and shows in B/op).
				runtime.GC()
				b.StartTimer()
				cpu0 := cpuTime()
				st := s.RunPass()
				cpu += cpuTime() - cpu0
				starts += st.Starts
				completions += st.ByState[queue.Complete]
				passes++
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu)/float64(passes), "cpu-ns/op")
			b.ReportMetric(float64(starts)/float64(passes), "starts/op")
			b.ReportMetric(float64(completions)/float64(passes), "completions/op")
			if starts < passes*churnExits*9/10 {
				b.Fatalf("unrealistic churn: %d starts in %d passes", starts, passes)
			}
		})
	}
}

// cpuTime is the CPU time (user and system, every thread: the pass and the
// garbage collector) the process has used. The machine these benchmarks
// run on is shared, so the CPU a pass costs says more than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
