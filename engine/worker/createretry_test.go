package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
)

// lossySet records the tags of every create, and answers the first
// lose creates with an error the driver could not classify after the
// instance was made (an answer lost to a timeout).
type lossySet struct {
	*wrapSet
	mu   sync.Mutex
	lose int
	tags []cloud.Tags
}

func (s *lossySet) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	s.mu.Lock()
	s.tags = append(s.tags, tags.Clone())
	lose := s.lose > 0
	if lose {
		s.lose--
	}
	s.mu.Unlock()
	inst, err := s.wrapSet.Create(ctx, it, tags)
	if err == nil && lose {
		return nil, errors.New("RunInstances: context deadline exceeded")
	}
	return inst, err
}

func (s *lossySet) created() []cloud.Tags {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]cloud.Tags(nil), s.tags...)
}

// A create whose outcome is unknown is retried with the same tags (the
// same secret, so the same idempotency token); one the provider refused,
// or a retry too late, gets new ones.
func TestCreateRetryReusesTags(t *testing.T) {
	h := newHarness(t, hopt{})
	ls := &lossySet{wrapSet: h.set, lose: 2}
	h.pool = h.newPool(func(o *Options) { o.InstanceSet = ls })
	h.step()
	create := func() {
		t.Helper()
		if err := h.pool.Create("small"); err != nil {
			t.Fatal(err)
		}
		h.pool.Wait()
	}
	create()
	create()
	create()
	got := ls.created()
	if len(got) != 3 {
		t.Fatalf("%d creates reached the driver, want 3", len(got))
	}
	for i := 1; i < 3; i++ {
		if got[i][cloud.TagSecret] != got[0][cloud.TagSecret] || got[i][cloud.TagCreatedAt] != got[0][cloud.TagCreatedAt] {
			t.Fatalf("retry %d of a create with an unknown outcome has other tags: %v, first %v", i, got[i], got[0])
		}
	}
	// That one succeeded: the next create is a new instance.
	create()
	if got = ls.created(); got[3][cloud.TagSecret] == got[0][cloud.TagSecret] {
		t.Fatalf("a create after a success reused the secret %s", got[0][cloud.TagSecret])
	}

	// A refusal (capacity) made nothing: no reuse.
	h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes = map[string]bool{"s1": true} })
	create()
	h.drv.Configure(func(f *fake.Faults) { f.CapacityErrorTypes = nil })
	h.run(time.Hour)
	create()
	if got = ls.created(); got[5][cloud.TagSecret] == got[4][cloud.TagSecret] {
		t.Fatalf("a create after a capacity refusal reused the secret")
	}

	// Kept too long: new tags.
	ls.mu.Lock()
	ls.lose = 1
	ls.mu.Unlock()
	create()
	h.clk.Advance(createRetryWindow)
	create()
	if got = ls.created(); got[7][cloud.TagSecret] == got[6][cloud.TagSecret] {
		t.Fatalf("a retry after %s reused the secret", createRetryWindow)
	}

	// A listing finds what the create of unknown outcome made: it is
	// adopted, and the next create is a new instance.
	ls.mu.Lock()
	ls.lose = 1
	ls.mu.Unlock()
	create()
	lost := ls.created()[8][cloud.TagSecret]
	h.run(h.cfg.Cloud.SyncInterval)
	adopted := false
	for _, v := range h.pool.Instances(nil) {
		if inst, ok := h.drv.Instance(v.ID); ok && inst.Tags()[cloud.TagSecret] == lost {
			adopted = true
		}
	}
	if !adopted {
		t.Fatalf("the instance of the lost create was not adopted: %s", h.dump())
	}
	create()
	if got = ls.created(); got[9][cloud.TagSecret] == lost {
		t.Fatalf("a create after the listing adopted the lost create's instance reused its secret")
	}
}
