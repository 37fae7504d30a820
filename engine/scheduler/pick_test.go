package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// refPick is pick as a plain scan over every slot: of type typ, ready (or
// waiting when !wantReady, which an instance withheld for a container at
// quota is not), with room for rc; pack takes the most containers, spread
// the fewest, ties to the lowest slot index. Like pick, it finds nothing
// for a need at least as big as one that found nothing earlier in the pass
// (until addPending adds a slot of the type).
func refPick(s *Scheduler, typ int, rc queue.Constraints, wantReady bool) int {
	if m := mode(wantReady); s.failed[m][typ] && geq(rc, s.failNeed[m][typ]) {
		return -1
	}
	best := -1
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.typ != typ || sl.ready != wantReady || !(sl.ready || sl.waiting) || !s.hasRoom(sl, rc) {
			continue
		}
		if best < 0 || (s.spread && sl.count < s.slots[best].count) || (!s.spread && sl.count > s.slots[best].count) {
			best = i
		}
	}
	return best
}

// TestPickMatchesScan drives pick, place, freeFor and addPending over
// random slot tables and compares every pick with refPick, and the roomy
// counts with a recount.
func TestPickMatchesScan(t *testing.T) {
	const gib = int64(1) << 30
	types := []cloud.InstanceType{
		{Name: "a", VCPUs: 2, RAM: 4 * gib, Scratch: 10 * gib, Price: 0.1},
		{Name: "b", VCPUs: 4, RAM: 8 * gib, Scratch: 20 * gib, Price: 0.2},
		{Name: "c", VCPUs: 8, RAM: 16 * gib, Scratch: 40 * gib, GPUs: 1, Price: 0.4},
	}
	states := []worker.State{worker.StateIdle, worker.StateRunning, worker.StateBooting, worker.StateUnknown, worker.StateShutdown}
	for _, profile := range []string{"pack", "spread"} {
		for _, maxPer := range []int{0, 1, 3} {
			for seed := range uint64(40) {
				t.Run(fmt.Sprintf("%s/maxPer=%d/seed=%d", profile, maxPer, seed), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(maxPer)))
					shape := func() queue.Constraints {
						return queue.Constraints{VCPUs: rng.IntN(4), RAM: rng.Int64N(6 * gib), Scratch: rng.Int64N(12 * gib), GPUs: rng.IntN(2) * rng.IntN(2)}
					}
					cfg := config.Default()
					cfg.InstanceTypes = types
					cfg.Dispatcher.MaxContainersPerInstance = maxPer
					cfg.Dispatcher.SchedulerProfile = profile
					cfg.Dispatcher.ReserveExtraRAM = 256 << 20
					s := New(cfg, nil, nil, clock.NewFake(time.Unix(0, 0)), nil)
					for pass := range 3 { // the scratch lists are reused
						s.views = s.views[:0]
						for i := range rng.IntN(60) {
							v := worker.InstanceView{Instance: view.Instance{ID: cloud.InstanceID(fmt.Sprint("i-", i)), State: states[rng.IntN(len(states))], IdleBehavior: worker.IdleRun}}
							if rng.IntN(8) == 0 {
								v.IdleBehavior = worker.IdleHold
							}
							if k := rng.IntN(len(types) + 1); k < len(types) {
								v.Type = types[k].Name
							}
							for j := range rng.IntN(3) {
								v.Containers = append(v.Containers, fmt.Sprint("c-", i, "-", j))
							}
							s.views = append(s.views, v)
						}
						s.indexInstances()
						for i := range s.slots {
							for range s.slots[i].count {
								addUse(&s.slots[i].used, shape(), s.reserveRAM)
							}
						}
						s.finishIndex()
						ps := passState{}
						w := quotaWaiter{c: &queue.Container{ContainerBody: view.ContainerBody{ID: "ahead"}}}
						for step := range 300 {
							typ, rc, wantReady := rng.IntN(len(types)), shape(), rng.IntN(2) == 0
							want := refPick(s, typ, rc, wantReady)
							got := s.pick(typ, rc, wantReady)
							if got != want {
								t.Fatalf("pass %d step %d: pick(%d, %+v, %v) = %d, scan says %d", pass, step, typ, rc, wantReady, got, want)
							}
							switch {
							case got >= 0 && wantReady && rng.IntN(6) == 0 && !s.slots[got].allocated:
								s.freeFor(&ps, got, &w)
							case got >= 0:
								s.place(got, rc)
							case rng.IntN(4) == 0 && typeHolds(types[typ], rc, s.reserveRAM):
								s.addPending(typ, rc)
							}
							checkRoomy(t, s)
						}
					}
				})
			}
		}
	}
}

// checkRoomy recounts roomyByCount and roomySlots from the
// slots, and checks each slot's view is its own.
func checkRoomy(t *testing.T, s *Scheduler) {
	t.Helper()
	total := 0
	defer func() {
		if s.roomySlots != total {
			t.Fatalf("roomySlots = %d, recount %d", s.roomySlots, total)
		}
	}()
	for i := range s.slots {
		if s.slots[i].view != &s.views[i] {
			t.Fatalf("slot %d's view is not views[%d]", i, i)
		}
	}
	for m := range 2 {
		for typ := range s.types {
			n, byCount := 0, map[int]int{}
			for i := range s.slots {
				sl := &s.slots[i]
				if sl.typ == typ && mode(sl.ready) == m && (sl.ready || sl.waiting) && s.hasRoom(sl, queue.Constraints{}) {
					n++
					total++
					byCount[sl.count]++
				}
			}
			if sum := sumInts(s.roomyByCount[m][typ]); sum != n {
				t.Fatalf("roomy slots of mode %d type %d = %d, recount %d", m, typ, sum, n)
			}
			bc := s.roomyByCount[m][typ]
			for c, k := range bc {
				if byCount[c] != k {
					t.Fatalf("roomyByCount[%d][%d] = %v, recount %v", m, typ, bc, byCount)
				}
			}
			for c := range byCount {
				if c >= len(bc) {
					t.Fatalf("roomyByCount[%d][%d] = %v, recount %v", m, typ, bc, byCount)
				}
			}
		}
	}
}

// TestInstanceCreatedInThePassTakesLaterContainers: with several containers
// per instance, a container that found no room on the booting instances
// gets a new one, and a later container of the same size waits for that
// new instance's room instead of creating another (the no-room
// short-circuit is dropped when an instance is added).
func TestInstanceCreatedInThePassTakesLaterContainers(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(t, clk)
	cfg := config.Default()
	cfg.InstanceTypes = benchTypes
	cfg.Dispatcher.MaxContainersPerInstance = 0
	cfg.Dispatcher.ReserveExtraRAM = 0
	medium := benchTypes[1]
	pool := &stubPool{probed: true, quota: 10, views: []worker.InstanceView{{
		Instance: view.Instance{
			ID:           "i-boot",
			Type:         medium.Name,
			ProviderType: medium.ProviderType,
			Price:        medium.Price,
			State:        worker.StateBooting,
			IdleBehavior: worker.IdleRun,
		},
	}}}
	var ids []string
	for i, vcpus := range []int{3, 2, 2} { // medium has 4 vCPUs
		prio := 3 - i
		c, err := q.Submit(queue.Spec{Command: []string{"true"}, Priority: &prio, RuntimeConstraints: queue.Constraints{VCPUs: vcpus, RAM: 1 << 30}}, "test")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	s := New(cfg, q, pool, clk, nil)
	s.RunPass()
	if len(pool.created) != 1 {
		t.Fatalf("created %v, want one medium: the third container fits beside the second on it", pool.created)
	}
	for _, id := range ids {
		if c, _ := q.Get(id); c.State != queue.Locked || c.ReasonCode != queue.ReasonBooting {
			t.Errorf("%s: %s %s %q, want Locked BOOTING", id, c.State, c.ReasonCode, c.Reason)
		}
	}
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
