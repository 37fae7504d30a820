package e2e

// The churn TestAttachedConsoleCost keeps up while it times the CLI: 1 %
// of the queue changed every second, by a bulk priority verb on one value
// of the "pct" label (two requests of 5,000 at a million: the most one
// takes).

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"dispatch-tui/engine/api"
	engview "dispatch-tui/engine/view" // the package has a view() of its own
)

// churn is the background changer; its counts are its goroutine's until
// stop returns them.
type churn struct {
	cancel context.CancelFunc
	done   chan churnResult
}

// churnResult is what a churn did: the containers changed, the seconds it
// ran, each second's time to make its changes and when it began, the
// failures.
type churnResult struct {
	started  time.Time
	changed  int
	elapsed  time.Duration
	rounds   []time.Duration
	begun    []time.Duration // round i began begun[i] after started
	failures int
	firstErr error
}

// startChurn changes 1 % of the queue each second from now until stop:
// round r gives every container labelled pct=r%100 the priority 1000+r,
// so each round changes its containers (a group comes back after 100
// rounds with another value). A round that takes over a second delays the
// next: the rate reached is in the result.
func startChurn(c *api.Client) *churn {
	ctx, cancel := context.WithCancel(context.Background())
	ch := &churn{cancel: cancel, done: make(chan churnResult, 1)}
	go func() {
		res := churnResult{started: time.Now()}
		start := res.started
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for r := 0; ; r++ {
			t0 := time.Now()
			n, err := churnRound(ctx, c, r)
			res.changed += n
			if err != nil && ctx.Err() == nil {
				res.failures++
				if res.firstErr == nil {
					res.firstErr = err
				}
			}
			if ctx.Err() == nil {
				res.rounds = append(res.rounds, time.Since(t0))
				res.begun = append(res.begun, t0.Sub(start))
			}
			select {
			case <-ctx.Done():
				res.elapsed = time.Since(start)
				ch.done <- res
				return
			case <-tick.C:
			}
		}
	}()
	return ch
}

// churnRound is round r: one group's priority set, page by page.
func churnRound(ctx context.Context, c *api.Client, r int) (int, error) {
	prio := 1000 + r
	req := api.BulkRequest{Verb: engview.ContainerPriority.String(), Priority: &prio,
		Selector: &api.Selector{Label: []string{"pct=" + strconv.Itoa(r%churnGroups)}}}
	changed := 0
	for {
		ans, err := c.Bulk(ctx, req)
		changed += ans.OK
		if err != nil {
			return changed, fmt.Errorf("round %d: bulk priority: %w", r, err)
		}
		if ans.Failed > 0 {
			return changed, fmt.Errorf("round %d: bulk priority failed on %d containers", r, ans.Failed)
		}
		if ans.Continue == "" {
			return changed, nil
		}
		req.Continue = ans.Continue
	}
}

// stop ends the churn and returns what it did.
func (ch *churn) stop() churnResult {
	ch.cancel()
	return <-ch.done
}

// String says the rate reached, the rounds' times and when the slowest
// began (to line them up with the CLI's slowest submits and a collector's
// trace).
func (r churnResult) String() string {
	out := fmt.Sprintf("%d containers' priority changed in %s (%.0f a second); a round took %s; the slowest: %s",
		r.changed, r.elapsed.Round(time.Millisecond), float64(r.changed)/r.elapsed.Seconds(), quantiles(r.rounds), slowest(r.rounds, r.begun, 3))
	if r.failures > 0 {
		out += fmt.Sprintf("; %d rounds failed, the first: %v", r.failures, r.firstErr)
	}
	return out
}
