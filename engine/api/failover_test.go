package api

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// counted serves h on addr ("" = a free port), counting its requests.
func counted(t *testing.T, addr string, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	n := &atomic.Int32{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); h.ServeHTTP(w, r) }))
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen again on %s: %v", addr, err)
		}
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, n
}

// TestFailover: a client of two servers uses the first while it answers;
// with the first stopped it goes on to the second and stays there (a
// server back at the first address gets nothing); with both stopped it
// names both. A server that answers with an error is not failed over:
// the request reached it.
func TestFailover(t *testing.T) {
	e := newEnv(t)
	h := e.srv.Config.Handler
	a, na := counted(t, "", h)
	b, nb := counted(t, "", h)
	c, err := Dial(a.URL+", "+b.URL, ClientOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Summary(t.Context()); err != nil || na.Load() != 1 || nb.Load() != 0 || c.Where() != a.URL {
		t.Fatalf("both up: %v, requests a %d b %d, where %s; want a's answer", err, na.Load(), nb.Load(), c.Where())
	}
	aAddr := a.Listener.Addr().String()
	a.Close()
	if _, err := c.Summary(t.Context()); err != nil || nb.Load() != 1 || c.Where() != b.URL {
		t.Fatalf("a stopped: %v, requests b %d, where %s; want b's answer", err, nb.Load(), c.Where())
	}
	a2, na2 := counted(t, aAddr, h)
	if _, err := c.Summary(t.Context()); err != nil || nb.Load() != 2 || na2.Load() != 0 {
		t.Fatalf("after failing over: %v, requests b %d, a again %d; want b kept", err, nb.Load(), na2.Load())
	}
	// An answer, even an error, is not a reason to go on: the request
	// was carried (or refused) there.
	bad, err := Dial(b.URL+","+a2.URL, ClientOptions{Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Pause(t.Context(), ""); apiErr(t, err, http.StatusForbidden) == nil || na2.Load() != 0 {
		t.Fatalf("a refusal at b went on to a (%d requests)", na2.Load())
	}
	a2.Close()
	b.Close()
	_, err = c.Summary(t.Context())
	var ue *UnreachableError
	if !errors.As(err, &ue) || len(ue.Tried) != 2 || ue.Tried[0] != b.URL || ue.Tried[1] != a.URL {
		t.Fatalf("both stopped: %v; want an UnreachableError trying b then a", err)
	}
}

// TestFailoverSocket: a socket that is gone, first in the list, is passed
// over for a TCP server, which gets the token the socket never does.
func TestFailoverSocket(t *testing.T) {
	e := newEnv(t)
	gone := filepath.Join(t.TempDir(), "gone.sock")
	c, err := Dial("unix:"+gone+","+e.srv.URL, ClientOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.WhoAmI(t.Context())
	if err != nil || id.Actor != "token:default" || c.Where() != e.srv.URL {
		t.Fatalf("whoami past a missing socket: %+v, %v (where %s); want token:default at %s", id, err, c.Where(), e.srv.URL)
	}
	if err := CheckServer("unix:" + gone + ", " + e.srv.URL); err != nil {
		t.Fatal(err)
	}
	if err := CheckServer(e.srv.URL + ",foo"); err == nil || !strings.Contains(err.Error(), `"foo"`) {
		t.Fatalf("a list with a bad address: %v; want it named", err)
	}
}
