package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"dispatch-tui/engine/view"
)

// aCluster is what a standby b answers: a leads at epoch 4, c's row says
// it led at epoch 3 and it has been quiet for five minutes.
func aCluster() view.Cluster {
	return view.Cluster{Leader: "a", Epoch: 4, Self: "b", Nodes: []view.ClusterNode{
		{Name: "a", Role: view.RoleLeader, Address: "https://a:7070", LastSeen: testStart.Add(-time.Second), Epoch: 4, TLSFingerprint: "ab12"},
		{Name: "b", Role: view.RoleStandby, Address: "https://b:7070", LastSeen: testStart.Add(-2 * time.Second), Epoch: 4},
		{Name: "c", Role: view.RoleLeader, Address: "https://c:7070", LastSeen: testStart.Add(-5 * time.Minute), Epoch: 3},
	}}
}

// TestLsNodes: the table shows each node's role, address, last heartbeat
// and epoch, a stale leader's row marked, the leader in the notes; json
// and yaml are GET /v1/cluster's object; -o name the node names. With a
// list of servers whose first is stopped, the second answers.
func TestLsNodes(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path != "/v1/cluster" {
			w.WriteHeader(http.StatusNotFound)
			writeJSONTo(w, map[string]string{"error": "no such endpoint"})
			return
		}
		writeJSONTo(w, aCluster())
	})
	stopped := httptest.NewServer(http.NotFoundHandler())
	stopped.Close()
	code, out, errOut := runCLI(t, stopped.URL+","+f.srv.URL, nil, "", "ls", "nodes")
	if code != 0 {
		t.Fatalf("ls nodes past a stopped server: exit %d, %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"NAME", "ROLE", "ADDRESS", "LAST", "SEEN", "EPOCH"},
		{"a", "leader", "https://a:7070", "1s", "4"},
		{"b", "standby", "https://b:7070", "2s", "4"},
		{"c", "leader", "(lease", "gone)", "https://c:7070", "5m0s", "3"},
	}
	if len(lines) != 5 {
		t.Fatalf("ls nodes:\n%s\nwant a header, three nodes and a note", out)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d %q; want %q", i, lines[i], strings.Join(w, " "))
		}
	}
	if !strings.Contains(lines[4], "leader: a at epoch 4; answered by b") {
		t.Errorf("note %q; want the leader, its epoch and the node asked", lines[4])
	}
	_, wide, _ := runCLI(t, f.srv.URL, nil, "", "ls", "nodes", "-o", "wide")
	if wl := strings.Split(wide, "\n"); len(wl) < 3 || !strings.HasSuffix(strings.TrimSpace(wl[0]), "TLS FINGERPRINT") || !strings.HasSuffix(strings.TrimSpace(wl[1]), " ab12") || !strings.HasSuffix(strings.TrimSpace(wl[2]), " -") {
		t.Errorf("-o wide:\n%s\nwant the certificates' fingerprints last", wide)
	}
	_, js, _ := runCLI(t, f.srv.URL, nil, "", "ls", "nodes", "-o", "json")
	var got view.Cluster
	if err := json.Unmarshal([]byte(js), &got); err != nil || got.Leader != "a" || got.Epoch != 4 || len(got.Nodes) != 3 || !got.Nodes[2].LastSeen.Equal(aCluster().Nodes[2].LastSeen) {
		t.Fatalf("-o json %s (%v); want the cluster back", js, err)
	}
	_, ym, _ := runCLI(t, f.srv.URL, nil, "", "ls", "nodes", "-o", "yaml")
	got = view.Cluster{}
	if err := yaml.Unmarshal([]byte(ym), &got); err != nil || got.Self != "b" || got.Nodes[1].Role != view.RoleStandby || !strings.Contains(ym, "last_seen:") {
		t.Fatalf("-o yaml %s (%v); want the cluster with its JSON names", ym, err)
	}
	if _, names, _ := runCLI(t, f.srv.URL, nil, "", "ls", "node", "-o", "name"); names != "a\nb\nc\n" {
		t.Fatalf("-o name %q; want a b c", names)
	}
	code, _, errOut = runCLI(t, stopped.URL+","+stopped.URL, nil, "", "ls", "nodes")
	if code != 1 || !strings.Contains(errOut, "cannot reach any of the dispatchers at "+stopped.URL+", "+stopped.URL) {
		t.Fatalf("every server stopped: exit %d, %q; want both named", code, errOut)
	}
}
