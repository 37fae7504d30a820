package queue

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The incremental scheduling order (order.go) must equal a full sort of the
// same containers after any mix of submits, priority changes, holds,
// transitions, pending reasons, kills, drops of finished containers and
// reopens, with each entry beside the order (entries.go) saying what its
// record does and each container the pending reason last set for it.
// Some seeds use priorities or first-seen times at the edges of what a
// packed key holds exactly, so that equal keys are ordered through the
// records.
func TestIncrementalOrderEqualsFullSort(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ {
		t.Run("", func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) {
				o.Store.NoSync = true
				if seed%3 == 0 {
					o.KeepFinished = 5 // drops finished containers at flushes
				}
			})
			prio := func(rng *rand.Rand) int { return rng.IntN(4) }
			switch seed % 4 {
			case 1: // two priorities kept exactly, two clamped
				prio = func(rng *rand.Rand) int { return prioMax - 3 + rng.IntN(4) }
			case 2: // first seen just before the key's epoch, then after
				e.clk.Set(time.Unix(fsEpoch-3, 0))
			}
			rng := rand.New(rand.NewPCG(seed, seed*7919))
			pending := map[string]Pending{} // what each container's reason must be
			for step := 0; step < 400; step++ {
				churnStep(t, e, rng, prio, pending)
				if step%10 == 9 {
					checkOrder(t, e.q, seed, step)
					checkPending(t, e, pending, seed, step)
				}
				if step == 200 {
					e.reopen()
					clear(pending) // memory only
					checkOrder(t, e.q, seed, step)
					checkPending(t, e, pending, seed, step)
				}
			}
		})
	}
}

// churnStep applies one random change: a batch of submits, priority
// changes, holds and releases, a kill, or a pass with random transitions
// and pending reasons, noting in pending the reason each container must
// show.
func churnStep(t *testing.T, e *env, rng *rand.Rand, prio func(*rand.Rand) int, pending map[string]Pending) {
	t.Helper()
	if rng.IntN(4) == 0 {
		e.clk.Advance(time.Duration(rng.IntN(3)) * time.Second) // ties in first-seen, and not
	}
	ids := func() []string {
		var out []string
		e.q.mu.Lock()
		for c := range e.q.byID.all() {
			id := c.ID
			if !c.State.Final() {
				out = append(out, id)
			}
		}
		e.q.mu.Unlock()
		slices.Sort(out) // map order is random; the rng picks deterministically
		return out
	}
	switch op := rng.IntN(11); {
	case op == 10:
		live := ids()
		for range 1 + rng.IntN(4) {
			if len(live) == 0 {
				break
			}
			id := live[rng.IntN(len(live))]
			var err error
			if rng.IntN(2) == 0 {
				_, err = e.q.Hold(id, "test", "")
			} else {
				_, err = e.q.Release(id, "test", "")
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	case op < 3:
		specs := make([]Spec, 1+rng.IntN(6))
		for i := range specs {
			p := prio(rng)
			specs[i] = Spec{Command: []string{"true"}, Priority: &p}
		}
		if _, err := e.q.SubmitBatch(specs, "test"); err != nil {
			t.Fatal(err)
		}
	case op < 5:
		live := ids()
		for range 1 + rng.IntN(4) {
			if len(live) == 0 {
				break
			}
			if _, err := e.q.SetPriority(live[rng.IntN(len(live))], prio(rng), "test", ""); err != nil {
				t.Fatal(err)
			}
		}
	case op < 6:
		if live := ids(); len(live) > 0 {
			id := live[rng.IntN(len(live))]
			if _, err := e.q.Kill(id, "test", ""); err != nil {
				t.Fatal(err)
			}
			delete(pending, id)
		}
	default:
		live := ids()
		err := e.q.Pass(func(tx *Tx) {
			for range 1 + rng.IntN(8) {
				if len(live) == 0 {
					return
				}
				c := tx.Get(live[rng.IntN(len(live))])
				if c.State.Final() {
					continue
				}
				if waiting := c.State == Queued || c.State == Locked; waiting && rng.IntN(3) == 0 {
					p := Pending{Code: ReasonPosition, N: rng.IntN(100)}
					if rng.IntN(2) == 0 {
						p = Pending{Code: ReasonBooting, Arg: "i-" + strconv.Itoa(rng.IntN(9))}
					}
					tx.SetPending(c, p)
					pending[c.ID] = p
					continue
				}
				var err error
				switch c.State {
				case Queued:
					err = tx.Lock(c, "small")
				case Locked:
					if rng.IntN(2) == 0 {
						err = tx.Unlock(c)
					} else {
						err = tx.Run(c, "i-1", "small")
						delete(pending, c.ID) // a started container's reason is gone
					}
				case Running:
					switch rng.IntN(3) {
					case 0:
						err = tx.Finish(c, 0, tx.Now())
					case 1:
						err = tx.Requeue(c, "test")
					default:
						err = tx.Cancel(c, ReasonKilled, "test")
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkPending compares every container's pending reason, as Views show
// it, with the one last set for it, and each entry beside the order with
// its record.
func checkPending(t *testing.T, e *env, want map[string]Pending, seed uint64, step int) {
	t.Helper()
	var cs []*Container
	e.q.Each(func(c *Container) bool { cs = append(cs, c); return true })
	for _, v := range e.q.Views(cs) {
		w := want[v.ID]
		if v.State != Queued && v.State != Locked {
			w = Pending{}
		}
		if got := v.Pending; got != w {
			t.Fatalf("seed %d step %d: %s (%s) pending %+v, want %+v", seed, step, v.ID, v.State, got, w)
		}
	}
	e.q.mu.Lock()
	defer e.q.mu.Unlock()
	if len(e.q.side) != len(e.q.active) {
		t.Fatalf("seed %d step %d: %d entries beside %d containers", seed, step, len(e.q.side), len(e.q.active))
	}
	for i, c := range e.q.active {
		got, w := e.q.side[i], entryFor(c, entry{})
		if got.flags != w.flags || got.shape != w.shape || e.q.shapes[got.shape] != c.RuntimeConstraints {
			t.Fatalf("seed %d step %d: %s's entry %+v, its record says %+v", seed, step, c.ID, got, w)
		}
	}
}

// checkOrder compares Each's walk with a full sort of every container.
func checkOrder(t *testing.T, q *Queue, seed uint64, step int) {
	t.Helper()
	var walked, final []*Container
	q.Each(func(c *Container) bool {
		if c.State.Final() {
			final = append(final, c)
		} else {
			walked = append(walked, c)
		}
		return true
	})
	q.mu.Lock()
	var want []*Container
	nFinal := 0
	for c := range q.byID.all() {
		if c.State.Final() {
			nFinal++
		} else {
			want = append(want, c)
		}
	}
	slices.SortFunc(want, compareContainers)
	bySeqOK := len(q.bySeq) == q.byID.len() && slices.IsSortedFunc(q.bySeq, func(a, b *Container) int { return compareSeq(a, b.Seq) })
	for _, c := range q.bySeq {
		bySeqOK = bySeqOK && q.byID.get(c.ID) == c
	}
	keysOK := len(q.keys) == len(q.active)
	for i := 0; keysOK && i < len(q.active); i++ {
		keysOK = q.keys[i] == placedKey(q.active[i])
	}
	q.mu.Unlock()
	if !keysOK {
		t.Fatalf("seed %d step %d: the keys are not those q.active is placed with", seed, step)
	}
	if !bySeqOK {
		t.Fatalf("seed %d step %d: the Seq index does not hold exactly the containers, in Seq order", seed, step)
	}
	if !slices.Equal(walked, want) {
		t.Fatalf("seed %d step %d: incremental order differs from a full sort:\ngot  %v\nwant %v", seed, step, seqs(walked), seqs(want))
	}
	if len(final) != nFinal || len(walked)+len(final) != q.byID.len() {
		t.Fatalf("seed %d step %d: walk saw %d active + %d final, queue has %d (%d final)", seed, step, len(walked), len(final), q.byID.len(), nFinal)
	}
}

func seqs(cs []*Container) []uint64 {
	out := make([]uint64, len(cs))
	for i, c := range cs {
		out[i] = c.Seq
	}
	return out
}
