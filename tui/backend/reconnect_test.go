package backend

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/api"
)

// A Remote over a server that answers status to everything, with a
// settable clock for its back-off. hits counts the requests the Remote
// sends, on the client's side: a request its own snapshot cancelled may
// reach the server after the snapshot returned.
type backoffEnv struct {
	srv    *httptest.Server
	r      *Remote
	hits   atomic.Int32
	status atomic.Int32
	mu     sync.Mutex
	now    time.Time
}

func newBackoffEnv(t *testing.T) *backoffEnv {
	e := &backoffEnv{now: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(e.status.Load()))
		w.Write([]byte(`{"error":"invalid token"}`))
	}))
	t.Cleanup(e.srv.Close)
	c := api.NewClient(e.srv.URL, "wrong")
	c.HTTP = &http.Client{Transport: sentCounter{&e.hits}}
	e.r = NewRemote(c, "remote "+e.srv.URL)
	e.r.now = func() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.now }
	return e
}

// sentCounter counts each request as it is sent.
type sentCounter struct{ n *atomic.Int32 }

func (c sentCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

func (e *backoffEnv) advance(d time.Duration) { e.mu.Lock(); e.now = e.now.Add(d); e.mu.Unlock() }

// A refused token (403) or a path that is no dispatcher's (404) is fatal:
// the console is to exit with it, not keep retrying.
func TestRemoteRefusalIsFatal(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusUnauthorized, http.StatusNotFound} {
		e := newBackoffEnv(t)
		e.status.Store(int32(status))
		_, err := e.r.Snapshot(context.Background())
		var ae *api.APIError
		if !IsFatal(err) || !errors.As(err, &ae) || ae.Status != status {
			t.Errorf("status %d: got %v, want a FatalError wrapping the API error", status, err)
		}
	}
}

// What may recover (a server error, no connection) is retried with a
// doubling back-off; meanwhile the Remote answers at once without a
// request; a success resets it.
func TestRemoteBacksOff(t *testing.T) {
	e := newBackoffEnv(t)
	e.status.Store(http.StatusServiceUnavailable)
	ctx := context.Background()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i, wait := range want {
		before := e.hits.Load()
		_, err := e.r.Snapshot(ctx)
		var re *RetryError
		if !errors.As(err, &re) || IsFatal(err) {
			t.Fatalf("attempt %d: %v, want a RetryError", i+1, err)
		}
		if e.hits.Load() == before {
			t.Fatalf("attempt %d made no request", i+1)
		}
		if re.Attempt != i+1 || !re.At.Equal(e.r.now().Add(wait)) {
			t.Fatalf("attempt %d: attempt %d, next at %v; want next after %v", i+1, re.Attempt, re.At, wait)
		}
		// Within the back-off: the same error, no request.
		before = e.hits.Load()
		e.advance(wait - time.Millisecond)
		if _, err := e.r.Snapshot(ctx); !errors.As(err, &re) || e.hits.Load() != before {
			t.Fatalf("within the back-off: %v, %d requests", err, e.hits.Load()-before)
		}
		e.advance(time.Millisecond)
	}

	// No connection at all is retried too.
	e.srv.Close()
	e.advance(time.Minute)
	if _, err := e.r.Snapshot(ctx); IsFatal(err) || !errors.As(err, new(*RetryError)) {
		t.Fatalf("connection refused: %v, want a RetryError", err)
	}
}
