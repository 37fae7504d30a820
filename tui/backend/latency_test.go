package backend

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"dispatch-tui/engine/api"
)

// pathCounter counts a client's requests by path.
type pathCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *pathCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *pathCounter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

// A refresh after a change reads the summary and the events once, then
// the lists: the reads that told it something changed are the snapshot's
// (two round trips, not four, between a change and the console's frame).
func TestRefreshAfterAChangeReadsTheSummaryOnce(t *testing.T) {
	e, _, srv := newRemoteEnv(t)
	pc := &pathCounter{n: map[string]int{}}
	c := api.NewClient(srv.URL, testToken)
	c.HTTP = &http.Client{Transport: pc}
	r := NewRemote(c, "remote")
	ctx := context.Background()
	if _, err := r.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pc.count("/v1/summary"); n != 1 {
		t.Errorf("the first snapshot read the summary %d times, want 1", n)
	}
	e.submit("one", -1, 1)
	before := pc.count("/v1/summary")
	s, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rows.Len() != 1 {
		t.Fatalf("the snapshot after a submit has %d containers, want 1", s.Rows.Len())
	}
	if n := pc.count("/v1/summary") - before; n != 1 {
		t.Errorf("a refresh after a submit read the summary %d times, want 1", n)
	}
}
