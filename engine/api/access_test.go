package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const viewerToken = "viewer-secret"

// TestEveryRouteHasARole walks every route the server registers: each
// names a role, whatever changes the dispatcher needs an operator, a
// viewer token gets 403 saying so on those and passes the role check on
// the others, and an operator token passes everywhere.
func TestEveryRouteHasARole(t *testing.T) {
	e := newEnv(t)
	h := NewServer(ServerOptions{
		Engine: e.eng, Metrics: http.NotFoundHandler(),
		Tokens: []Token{{Name: "ops", Role: RoleOperator, Secret: testToken}, {Name: "bob", Role: RoleViewer, Secret: viewerToken}},
	}).(*server)
	srv := httptest.NewServer(h)
	defer srv.Close()
	id := e.submit("a", []string{"run-forever"}, 0)
	if len(h.roles) < 14 {
		t.Fatalf("only %d routes registered", len(h.roles))
	}
	for pattern, role := range h.roles {
		t.Run(pattern, func(t *testing.T) {
			method, path, _ := strings.Cut(pattern, " ")
			switch {
			case role == roleUnset:
				t.Fatalf("route %s has no role", pattern)
			case method != http.MethodGet && role != RoleOperator:
				t.Fatalf("route %s changes the dispatcher but needs only the %s role", pattern, role)
			}
			path = strings.NewReplacer("{id}", id, "{verb}", "hold").Replace(path)
			for _, tc := range []struct {
				token string
				deny  bool
			}{
				{viewerToken, role == RoleOperator},
				{testToken, false},
			} {
				req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader("{}"))
				req.Header.Set("Authorization", "Bearer "+tc.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var body strings.Builder
				if resp.StatusCode == http.StatusForbidden {
					buf := make([]byte, 4096)
					n, _ := resp.Body.Read(buf)
					body.Write(buf[:n])
				}
				resp.Body.Close()
				denied := resp.StatusCode == http.StatusForbidden
				if denied != tc.deny {
					t.Errorf("%s with the %s token: status %d %s, want denied=%v", pattern, map[bool]string{true: "viewer", false: "operator"}[tc.token == viewerToken], resp.StatusCode, body.String(), tc.deny)
				}
				if denied && !strings.Contains(body.String(), "token:bob has the viewer role") {
					t.Errorf("%s: 403 does not say why: %s", pattern, body.String())
				}
			}
		})
	}
	// The viewer's identity, through the client.
	c := NewClient(srv.URL, viewerToken)
	if id, err := c.WhoAmI(t.Context()); err != nil || id.Actor != "token:bob" || id.Role != "viewer" {
		t.Errorf("WhoAmI = %+v, %v", id, err)
	}
}

// serveSocket serves h on a unix socket with peer credentials.
func serveSocket(t *testing.T, h http.Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnContext: PeerContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return path
}

func TestSocketPeerIsTheActor(t *testing.T) {
	e := newEnv(t)
	// Tokens are configured, but the socket needs none.
	path := serveSocket(t, NewServer(ServerOptions{Engine: e.eng, Token: testToken}))
	c, err := Dial("unix:"+path, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.WhoAmI(t.Context())
	want := fmt.Sprintf("uid:%d", os.Getuid())
	if err != nil || !strings.HasPrefix(id.Actor, want) || id.Role != "operator" {
		t.Fatalf("WhoAmI over the socket = %+v, %v; want %s…, operator", id, err, want)
	}
	if err := c.Pause(t.Context(), "socket"); err != nil {
		t.Fatal(err)
	}
	evs, _ := e.eng.Events(0, 0)
	if last := evs[len(evs)-1]; last.Actor != id.Actor || last.Action != "pause" {
		t.Errorf("pause recorded as %+v, want actor %s", last, id.Actor)
	}

	// A peer the policy refuses gets 403.
	refusing := serveSocket(t, NewServer(ServerOptions{Engine: e.eng, SocketPeer: func(Peer) bool { return false }}))
	c, _ = Dial(refusing, ClientOptions{})
	_, err = c.Summary(t.Context())
	apiErr(t, err, http.StatusForbidden)
}

func TestDial(t *testing.T) {
	for _, tc := range []struct {
		server string
		opts   ClientOptions
		want   string // "" = ok
	}{
		{"unix:/run/d.sock", ClientOptions{}, ""},
		{"/run/d.sock", ClientOptions{}, ""},
		{"127.0.0.1:9006", ClientOptions{Token: "t"}, ""},
		{"http://localhost:9006", ClientOptions{Token: "t"}, ""},
		{"http://[::1]:9006", ClientOptions{Token: "t"}, ""},
		{"http://10.0.0.5:9006", ClientOptions{}, ""}, // no token to leak
		{"http://10.0.0.5:9006", ClientOptions{Token: "t"}, "refusing to send a token in clear"},
		{"d.example:9006", ClientOptions{Token: "t"}, "refusing to send a token in clear"},
		{"https://d.example:9006", ClientOptions{Token: "t"}, ""},
		{"https://d.example:9006", ClientOptions{TLSFingerprint: "sha256:" + strings.Repeat("ab", 32)}, ""},
		{"https://d.example:9006", ClientOptions{TLSFingerprint: "abc"}, "64 hex digits"},
		{"http://127.0.0.1:9006", ClientOptions{TLSFingerprint: strings.Repeat("ab", 32)}, "needs an https:// server"},
		{"unix:/run/d.sock", ClientOptions{TLSFingerprint: strings.Repeat("ab", 32)}, "applies to https://"},
		{"ftp://x:1", ClientOptions{}, "unknown scheme"},
	} {
		_, err := Dial(tc.server, tc.opts)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Dial(%q, %+v) = %v, want %q", tc.server, tc.opts, err, tc.want)
		}
	}
}

// TestPinnedFingerprint: a pinned certificate is accepted whatever signed
// it; any other certificate is refused before a request is sent.
func TestPinnedFingerprint(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewTLSServer(NewServer(ServerOptions{Engine: e.eng, Token: testToken}))
	defer srv.Close()
	fp := Fingerprint(srv.Certificate().Raw)
	for _, tc := range []struct {
		pin  string
		want string
	}{
		{fp, ""},
		{strings.ToUpper(fp), ""},
		{strings.Repeat("00", 32), "does not match the pinned"},
		{"", "certificate"}, // httptest's CA is not a system root
	} {
		c, err := Dial(srv.URL, ClientOptions{Token: testToken, TLSFingerprint: tc.pin})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Summary(t.Context())
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("pin %q: %v, want %q", tc.pin, err, tc.want)
		}
	}
}
