package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// fakeCluster is a node's membership as a test sets it.
type fakeCluster struct {
	leading atomic.Bool
	leader  atomic.Pointer[[2]string] // name, address; nil: none known
	state   view.Cluster
}

func (f *fakeCluster) Leading() bool { return f.leading.Load() }
func (f *fakeCluster) Leader(context.Context) (string, string, bool) {
	if l := f.leader.Load(); l != nil {
		return l[0], l[1], true
	}
	return "", "", false
}
func (f *fakeCluster) State(context.Context) (view.Cluster, error) { return f.state, nil }

const testPeerSecret = "peer-secret-of-the-cluster"

// standbyEnv is a leader (the apiEnv's engine, served with the cluster's
// peer secret) and a standby in front of it, on TCP and on a socket,
// with no engine at all.
type standbyEnv struct {
	*apiEnv
	leader, standby *fakeCluster
	standbySrv      *httptest.Server
	standbySock     string
	viaStandby      *Client // token client of the standby
}

func newStandbyEnv(t *testing.T) *standbyEnv {
	t.Helper()
	e := newEnv(t)
	leader := &fakeCluster{}
	leader.leading.Store(true)
	h := NewServer(ServerOptions{Engine: e.eng, Token: testToken, Cluster: leader, PeerSecret: testPeerSecret}).(*server)
	h.followPoll = 5 * time.Millisecond
	waits := make(chan struct{}, 1)
	h.followWaiting = func() {
		select {
		case waits <- struct{}{}:
		default:
		}
	}
	ls := httptest.NewServer(h)
	t.Cleanup(ls.Close)
	e.srv, e.followWaits = ls, waits
	e.client = NewClient(ls.URL, testToken)
	standby := &fakeCluster{state: view.Cluster{Leader: "a", Epoch: 7, Self: "b", Nodes: []view.ClusterNode{
		{Name: "a", Role: view.RoleLeader, Address: e.srv.URL, Epoch: 7}, {Name: "b", Role: view.RoleStandby, Epoch: 7}}}}
	standby.leader.Store(&[2]string{"a", e.srv.URL})
	sh := NewServer(ServerOptions{Token: testToken, Cluster: standby, PeerSecret: testPeerSecret})
	ss := httptest.NewServer(sh)
	t.Cleanup(ss.Close)
	c := NewClient(ss.URL, testToken)
	c.Actor = "test:alice"
	return &standbyEnv{apiEnv: e, leader: leader, standby: standby, standbySrv: ss, standbySock: serveSocket(t, sh), viaStandby: c}
}

// TestStandbyForwards: requests sent to a standby are carried out by the
// leader, which records the caller the standby authenticated (a socket
// peer here, which the leader could never have seen itself), not the
// standby; the cluster is answered by the standby itself.
func TestStandbyForwards(t *testing.T) {
	e := newStandbyEnv(t)
	id := e.submit("a", []string{"run-forever"}, 0)
	got, err := e.viaStandby.Container(t.Context(), id)
	if err != nil || got.ID != id {
		t.Fatalf("GET through the standby: %+v, %v; want container %s from the leader", got, err, id)
	}
	sc, err := Dial("unix:"+e.standbySock, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	me := fmt.Sprintf("uid:%d", os.Getuid())
	who, err := sc.WhoAmI(t.Context())
	if err != nil || !strings.HasPrefix(who.Actor, me) || who.Role != "operator" {
		t.Fatalf("whoami through the standby's socket: %+v, %v; want the leader to see %s…, operator", who, err, me)
	}
	for _, tc := range []struct {
		c    *Client
		want string
	}{{sc, who.Actor}, {e.viaStandby, "token:default"}} {
		if _, err := tc.c.ContainerVerb(t.Context(), id, view.ContainerHold, ""); err != nil {
			t.Fatalf("hold through the standby: %v", err)
		}
		evs, _ := e.eng.Events(0, 0)
		if last := evs[len(evs)-1]; last.Action != "hold" || last.Actor != tc.want {
			t.Fatalf("the leader recorded %+v; want a hold by %s", last, tc.want)
		}
		if _, err := tc.c.ContainerVerb(t.Context(), id, view.ContainerRelease, ""); err != nil {
			t.Fatal(err)
		}
	}
	c, err := e.viaStandby.Cluster(t.Context())
	if err != nil || c.Self != "b" || c.Leader != "a" || c.Epoch != 7 || len(c.Nodes) != 2 {
		t.Fatalf("the cluster from the standby: %+v, %v; want the standby's own view (self b, leader a, epoch 7)", c, err)
	}
	c, err = e.client.Cluster(t.Context())
	if err != nil || c.Self != "" {
		t.Fatalf("the cluster from the leader: %+v, %v; want the leader's own (empty) view, not forwarded", c, err)
	}
	// The standby checks the caller itself: a viewer is refused there.
	resp, body := e.reqAt(t, e.standbySrv.URL, "POST", "/v1/containers/"+id+"/hold", "wrong-token", nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "invalid token") {
		t.Fatalf("a bad token at the standby: %d %s; want 403 there", resp.StatusCode, body)
	}
}

// TestForwardedIdentityNeedsThePeerSecret: the forwarded-caller headers
// from a client holding an ordinary token (or none) change nothing; with
// the peer secret they name the caller, and without them the peer is
// refused.
func TestForwardedIdentityNeedsThePeerSecret(t *testing.T) {
	e := newStandbyEnv(t)
	hdr := map[string]string{ForwardedActorHeader: "uid:0(root)", ForwardedRoleHeader: "operator"}
	resp, body := e.reqAt(t, e.srv.URL, "GET", "/v1/whoami", testToken, hdr)
	if resp.StatusCode != 200 || !strings.Contains(body, `"actor":"token:default"`) {
		t.Fatalf("forged headers with a token: %d %s; want token:default", resp.StatusCode, body)
	}
	resp, body = e.reqAt(t, e.srv.URL, "GET", "/v1/whoami", testPeerSecret, hdr)
	if resp.StatusCode != 200 || !strings.Contains(body, `"actor":"uid:0(root)"`) {
		t.Fatalf("the peer secret with the headers: %d %s; want uid:0(root)", resp.StatusCode, body)
	}
	resp, body = e.reqAt(t, e.srv.URL, "GET", "/v1/whoami", testPeerSecret, map[string]string{ForwardedRoleHeader: "viewer"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the peer secret naming no caller: %d %s; want 403", resp.StatusCode, body)
	}
	resp, body = e.reqAt(t, e.srv.URL, "POST", "/v1/scheduler/pause", testPeerSecret, map[string]string{ForwardedActorHeader: "token:bob", ForwardedRoleHeader: "viewer"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "viewer") {
		t.Fatalf("a forwarded viewer pausing: %d %s; want 403 for its role", resp.StatusCode, body)
	}
}

// TestStandbyWithoutLeader: with no leader known a standby answers 503
// with Retry-After and says what to do; a forwarded request reaching a
// node that no longer leads is not forwarded again; a leader that does
// not answer is a 502 that says so.
func TestStandbyWithoutLeader(t *testing.T) {
	e := newStandbyEnv(t)
	e.standby.leader.Store(nil)
	resp, body := e.reqAt(t, e.standbySrv.URL, "GET", "/v1/summary", testToken, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "knows no leader") {
		t.Fatalf("no leader: %d (Retry-After %q) %s; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// Health, and the cluster, are still this node's to answer.
	if resp, _ := e.reqAt(t, e.standbySrv.URL, "GET", "/v1/cluster", testToken, nil); resp.StatusCode != 200 {
		t.Fatalf("GET /v1/cluster without a leader: %d", resp.StatusCode)
	}
	// The old leader, deposed, gets a forwarded request: not passed on.
	e.leader.leading.Store(false)
	e.leader.leader.Store(&[2]string{"b", e.standbySrv.URL})
	resp, body = e.reqAt(t, e.srv.URL, "GET", "/v1/summary", testPeerSecret, map[string]string{ForwardedActorHeader: "token:default", ForwardedRoleHeader: "operator"})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "no longer leads") {
		t.Fatalf("a forwarded request at a deposed leader: %d %s; want 503", resp.StatusCode, body)
	}
	// A leader address where nothing answers.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	e.standby.leader.Store(&[2]string{"c", dead.URL})
	resp, body = e.reqAt(t, e.standbySrv.URL, "GET", "/v1/summary", testToken, nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "leader c at "+dead.URL+" did not answer") || strings.Contains(body, "dial") {
		t.Fatalf("a dead leader: %d %s; want 502 naming it, without the Go error", resp.StatusCode, body)
	}
}

// TestStandbyStreams: a follow stream through the standby passes output
// on as the leader writes it, not when the stream ends.
func TestStandbyStreams(t *testing.T) {
	e := newStandbyEnv(t)
	id := e.submit("follow-me", fake.Cmd(5*time.Second, 3), 1)
	var out enginetest.Buffer
	done := make(chan error, 1)
	go func() { done <- e.viaStandby.Logs(t.Context(), id, 0, true, &out) }()
	e.until("running", 30, func() bool { return e.state(id) == queue.Running })
	wait.Until(t, "the running line through the standby, the stream still open", 10*time.Second, func() bool { return strings.Contains(out.String(), "running") })
	select {
	case err := <-done:
		t.Fatalf("the stream ended (%v) before the container did: %q", err, out.String())
	default:
	}
	e.until("complete with its output stored", 300, func() bool {
		if e.state(id) != queue.Complete {
			return false
		}
		_, err := e.eng.Logs(t.Context(), id, 0)
		return err == nil
	})
	if err := awaitFollow(t, done, "after the container completed"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Count(got, "running") != 1 || strings.Count(got, "exited 3") != 1 {
		t.Fatalf("output through the standby %q: want one running and one exited line", got)
	}
}

// reqAt sends a request to base with token and extra headers.
func (e *standbyEnv) reqAt(t *testing.T, base, method, path, token string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// TestStandbyPinsTheLeader: to an https leader, a standby's PeerTransport
// trusts the certificate whose fingerprint the nodes table gives, and no
// other: a wrong or unknown one is a 502, nothing forwarded.
func TestStandbyPinsTheLeader(t *testing.T) {
	e := newEnv(t)
	leader := &fakeCluster{}
	leader.leading.Store(true)
	ls := httptest.NewTLSServer(NewServer(ServerOptions{Engine: e.eng, Token: testToken, Cluster: leader, PeerSecret: testPeerSecret}))
	t.Cleanup(ls.Close)
	standby := &fakeCluster{}
	standby.leader.Store(&[2]string{"a", ls.URL})
	var pin atomic.Pointer[string]
	ss := httptest.NewServer(NewServer(ServerOptions{Token: testToken, Cluster: standby, PeerSecret: testPeerSecret,
		Forward: PeerTransport(func() string {
			if p := pin.Load(); p != nil {
				return *p
			}
			return ""
		})}))
	t.Cleanup(ss.Close)
	c := NewClient(ss.URL, testToken)
	for _, tc := range []struct {
		name, pin string
		ok        bool
	}{
		{"unknown", "", false},
		{"wrong", Fingerprint([]byte("another certificate")), false},
		{"the leader's", Fingerprint(ls.Certificate().Raw), true},
	} {
		pin.Store(&tc.pin)
		_, err := c.Summary(t.Context())
		if tc.ok && err != nil {
			t.Fatalf("%s pin: %v; want the leader's answer", tc.name, err)
		}
		if !tc.ok {
			if ae := apiErr(t, err, http.StatusBadGateway); !strings.Contains(ae.Message, "leader a at "+ls.URL+" did not answer") {
				t.Fatalf("%s pin: %v; want a 502 naming the leader", tc.name, err)
			}
		}
	}
}
