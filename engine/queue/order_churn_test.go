package queue

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The incremental scheduling order (order.go) must equal a full sort of the
// same containers after any mix of submits, priority changes, transitions,
// kills, drops of finished containers and reopens. Some seeds use
// priorities or first-seen times at the edges of what a packed key holds
// exactly, so that equal keys are ordered through the records.
func TestIncrementalOrderEqualsFullSort(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ {
		t.Run("", func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				o.NoSync = true
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
			for step := 0; step < 400; step++ {
				churnStep(t, e, rng, prio)
				if step%10 == 9 {
					checkOrder(t, e.q, seed, step)
				}
				if step == 200 {
					e.reopen()
					checkOrder(t, e.q, seed, step)
				}
			}
		})
	}
}

// churnStep applies one random change: a batch of submits, priority
// changes, a kill, or a pass with random transitions.
func churnStep(t *testing.T, e *env, rng *rand.Rand, prio func(*rand.Rand) int) {
	t.Helper()
	if rng.IntN(4) == 0 {
		e.clk.Advance(time.Duration(rng.IntN(3)) * time.Second) // ties in first-seen, and not
	}
	ids := func() []string {
		var out []string
		e.q.mu.Lock()
		for id, c := range e.q.byID {
			if !c.State.Final() {
				out = append(out, id)
			}
		}
		e.q.mu.Unlock()
		slices.Sort(out) // map order is random; the rng picks deterministically
		return out
	}
	switch op := rng.IntN(10); {
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
			if _, err := e.q.Kill(live[rng.IntN(len(live))], "test", ""); err != nil {
				t.Fatal(err)
			}
		}
	default:
		live := ids()
		err := e.q.Pass(func(tx *Tx) {
			for range 1 + rng.IntN(8) {
				if len(live) == 0 {
					return
				}
				c := tx.Get(live[rng.IntN(len(live))])
				var err error
				switch c.State {
				case Queued:
					err = tx.Lock(c, "small")
				case Locked:
					if rng.IntN(2) == 0 {
						err = tx.Unlock(c)
					} else {
						err = tx.Run(c, "i-1", "small")
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
	for _, c := range q.byID {
		if c.State.Final() {
			nFinal++
		} else {
			want = append(want, c)
		}
	}
	slices.SortFunc(want, compareContainers)
	bySeqOK := len(q.bySeq) == len(q.byID) && slices.IsSortedFunc(q.bySeq, func(a, b *Container) int { return compareSeq(a, b.Seq) })
	for _, c := range q.bySeq {
		bySeqOK = bySeqOK && q.byID[c.ID] == c
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
	if len(final) != nFinal || len(walked)+len(final) != len(q.byID) {
		t.Fatalf("seed %d step %d: walk saw %d active + %d final, queue has %d (%d final)", seed, step, len(walked), len(final), len(q.byID), nFinal)
	}
}

func seqs(cs []*Container) []uint64 {
	out := make([]uint64, len(cs))
	for i, c := range cs {
		out[i] = c.Seq
	}
	return out
}
