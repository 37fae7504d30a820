package worker

import (
	"sync"
	"testing"

	"dispatch-tui/cloud"
)

// refusingSet is an InstanceSet reporting the refused hosts a test sets.
type refusingSet struct {
	*wrapSet
	mu    sync.Mutex
	hosts []cloud.RefusedHost
}

func (s *refusingSet) Refused() []cloud.RefusedHost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]cloud.RefusedHost(nil), s.hosts...)
}

func (s *refusingSet) set(hosts ...cloud.RefusedHost) {
	s.mu.Lock()
	s.hosts = hosts
	s.mu.Unlock()
}

// TestRefusedHostsShownWithTheirError: a host the driver refuses is a row
// in state refused with the error, and one event, until it is accepted.
func TestRefusedHostsShownWithTheirError(t *testing.T) {
	h := newHarness(t, hopt{})
	rs := &refusingSet{wrapSet: h.set}
	h.pool = h.newPool(func(o *Options) { o.InstanceSet = rs })
	host := cloud.RefusedHost{ID: "host-a", Address: "10.0.0.1:22", InstanceType: "small", Err: "host key verification failed: key changed"}
	rs.set(host)
	h.step()
	got := h.pool.RefusedHosts()
	if len(got) != 1 || got[0].ID != "host-a" || got[0].State != StateRefused || got[0].LastError != host.Err ||
		got[0].Type != "small" || got[0].ProviderType != "s1" || got[0].Address != host.Address {
		t.Fatalf("RefusedHosts() = %+v", got)
	}
	if !h.hasEvent("host-a", EventProbeError, "host refused: host key verification failed") {
		t.Fatalf("no event: %+v", h.events)
	}
	if len(h.pool.Instances(nil)) != 0 {
		t.Fatalf("a refused host is not an instance of the pool: %s", h.dump())
	}
	rs.set()
	h.run(h.cfg.Cloud.SyncInterval)
	if got := h.pool.RefusedHosts(); len(got) != 0 {
		t.Fatalf("still refused: %+v", got)
	}
	if !h.hasEvent("host-a", EventProbeOK, "accepted again") {
		t.Fatalf("no event when accepted: %+v", h.events)
	}
}
