package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
)

// scopedSet is a provider whose quotas are per scope, as EC2's vCPU quotas
// are per instance family group and market: every type's scope is its
// provider type's, and a scope's limit counts its live instances.
type scopedSet struct {
	cloud.InstanceSet
	mu     sync.Mutex
	limits map[string]int // scope -> instances; absent = no limit
	live   map[string]int
}

func (s *scopedSet) QuotaScope(it cloud.InstanceType) string { return "scope-" + it.ProviderType }

func (s *scopedSet) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	scope := s.QuotaScope(it)
	s.mu.Lock()
	if limit, ok := s.limits[scope]; ok && s.live[scope] >= limit {
		s.mu.Unlock()
		return nil, &cloud.QuotaError{Scope: scope, Err: fmt.Errorf("%s quota of %d reached", scope, limit)}
	}
	s.live[scope]++
	s.mu.Unlock()
	return s.InstanceSet.Create(ctx, it, tags)
}

func (s *scopedSet) setLimit(scope string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[scope] = n
}

// A quota of one scope stops the creates of its types only: a GPU quota
// of 0 must not stop the other types, nor count as the account's quota.
// The scope's estimate is probed one above after quota_probe_after, and
// follows a raised quota.
func TestQuotaOfAScopeStopsOnlyItsTypes(t *testing.T) {
	h := newHarness(t, hopt{cfg: func(c *config.Config) { c.Cloud.TimeoutIdle = time.Hour }})
	set := &scopedSet{InstanceSet: h.drv, limits: map[string]int{"scope-l1": 0}, live: map[string]int{}}
	h.pool = h.newPool(func(o *Options) {
		o.InstanceSet = set
		o.QuotaProbeAfter = 5 * time.Minute
	})
	h.step()
	if err := h.pool.Create("large"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	if !h.hasEvent("", EventCloudError, "quota scope-l1") {
		t.Fatalf("no quota event for the scope: %+v", h.events)
	}
	var qb *QuotaBlockedError
	if err := h.pool.Create("large"); !errors.As(err, &qb) || qb.Scope != "scope-l1" || qb.Limit != 0 {
		t.Fatalf("Create(large) after its scope's quota error: %v, want a QuotaBlockedError of scope-l1 at 0", err)
	}
	for i := 0; i < 3; i++ {
		if err := h.pool.Create("small"); err != nil {
			t.Fatalf("Create(small) #%d after another scope's quota error: %v", i, err)
		}
	}
	h.pool.Wait()
	if l, at := h.pool.Quota(); l != 10 || at {
		t.Fatalf("Quota() = %d %v: a scope's quota became the account's", l, at)
	}
	if n := len(h.pool.Instances(nil)); n != 3 {
		t.Fatalf("instances: %s", h.dump())
	}

	// The quota is raised: the probe after quota_probe_after gets one,
	// and the estimate follows it.
	set.setLimit("scope-l1", 1)
	h.clk.Advance(4 * time.Minute)
	if err := h.pool.Create("large"); !errors.As(err, &qb) {
		t.Fatalf("Create(large) before the probe time: %v", err)
	}
	h.clk.Advance(time.Minute)
	if err := h.pool.Create("large"); err != nil {
		t.Fatalf("probe create: %v", err)
	}
	h.pool.Wait()
	if err := h.pool.Create("large"); !errors.As(err, &qb) || qb.Limit != 1 {
		t.Fatalf("Create(large) after the probe got one: %v, want blocked at 1", err)
	}
}
