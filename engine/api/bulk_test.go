package api

import (
	"net/http"
	"strings"
	"testing"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// TestBulkIDs: one request kills a list of ids; each id has its own
// result, with the status a single verb would have answered.
func TestBulkIDs(t *testing.T) {
	e := newEnv(t)
	a, b := e.submit("a", []string{"true"}, 1), e.submit("b", []string{"true"}, 1)
	done := e.submit("done", []string{"true"}, 1)
	if _, err := e.client.ContainerVerb(t.Context(), done, view.ContainerKill, ""); err != nil {
		t.Fatal(err)
	}
	ans, err := e.client.Bulk(t.Context(), BulkRequest{Verb: "kill", Reason: "cleanup", IDs: []string{a, "c-0123456789abcdef", done, b}})
	if err != nil {
		t.Fatal(err)
	}
	if ans.OK != 2 || ans.Failed != 2 || len(ans.Items) != 4 {
		t.Fatalf("ok %d failed %d items %d, want 2, 2, 4: %+v", ans.OK, ans.Failed, len(ans.Items), ans)
	}
	for i, want := range []struct {
		state  queue.State
		status int
	}{{queue.Cancelled, 0}, {"", http.StatusNotFound}, {"", http.StatusConflict}, {queue.Cancelled, 0}} {
		it := ans.Items[i]
		if it.State != want.state || it.Status != want.status || (it.Status != 0) != (it.Err() != nil) {
			t.Errorf("item %d: %+v, want state %q status %d", i, it, want.state, want.status)
		}
	}
	if c, _ := e.eng.Container(b); c.State != queue.Cancelled || c.Reason != "cleanup" {
		t.Errorf("b after the bulk kill: %s %q", c.State, c.Reason)
	}
	if msg := ans.Items[2].Error; !strings.Contains(msg, "a finished container cannot be killed") {
		t.Errorf("finished container's error: %q", msg)
	}
}

// TestBulkSelectorPages: a selector request changes at most limit
// containers and says where to go on; following continue reaches every
// match once, and nothing the selector does not match.
func TestBulkSelectorPages(t *testing.T) {
	e := newEnv(t)
	var team, other []string
	for range 5 {
		team = append(team, e.submit("team-x", []string{"true"}, 1))
		other = append(other, e.submit("other", []string{"true"}, 1))
	}
	req := BulkRequest{Verb: "hold", Selector: &Selector{State: []string{"Queued"}, Q: "team-x"}, Limit: 2}
	seen := map[string]int{}
	for range 10 {
		ans, err := e.client.Bulk(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Items) > 2 || ans.Failed != 0 {
			t.Fatalf("a page of limit 2: %+v", ans)
		}
		for _, it := range ans.Items {
			seen[it.ID]++
		}
		if ans.Continue == "" {
			break
		}
		req.Continue = ans.Continue
	}
	for _, id := range team {
		if c, _ := e.eng.Container(id); !c.Held || seen[id] != 1 {
			t.Errorf("%s: held %v, in %d answers; want held, in one", id, c.Held, seen[id])
		}
	}
	for _, id := range other {
		if c, _ := e.eng.Container(id); c.Held || seen[id] != 0 {
			t.Errorf("%s (not selected): held %v, in %d answers", id, c.Held, seen[id])
		}
	}
	// Priority takes its value from the body.
	p := 9
	ans, err := e.client.Bulk(t.Context(), BulkRequest{Verb: "priority", Priority: &p, Selector: &Selector{Q: "team-x"}})
	if err != nil || ans.OK != len(team) {
		t.Fatalf("bulk priority: %+v, %v", ans, err)
	}
	if c, _ := e.eng.Container(team[0]); c.Priority != 9 {
		t.Errorf("priority after the bulk verb: %d", c.Priority)
	}
}

// TestBulkRefused: requests that cannot say which containers, or what to
// do, are refused with a 400 that says why, and change nothing.
func TestBulkRefused(t *testing.T) {
	e := newEnv(t)
	id := e.submit("a", []string{"true"}, 1)
	p := 3
	for _, tt := range []struct {
		name string
		req  BulkRequest
		want string
	}{
		{"no target", BulkRequest{Verb: "kill"}, "ids or selector: required"},
		{"empty selector", BulkRequest{Verb: "kill", Selector: &Selector{}}, "would select every container"},
		{"both", BulkRequest{Verb: "kill", IDs: []string{id}, Selector: &Selector{Q: "a"}}, "not both"},
		{"unknown verb", BulkRequest{Verb: "drain", IDs: []string{id}}, `unknown container verb "drain"`},
		{"priority without value", BulkRequest{Verb: "priority", IDs: []string{id}}, "priority: required"},
		{"value without priority", BulkRequest{Verb: "hold", Priority: &p, IDs: []string{id}}, "only with verb priority"},
		{"bad state", BulkRequest{Verb: "kill", Selector: &Selector{State: []string{"Bogus"}}}, `selector.state: unknown state "Bogus"`},
		{"bad continue", BulkRequest{Verb: "kill", Selector: &Selector{Q: "a"}, Continue: "zz"}, "continue: not a token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.client.Bulk(t.Context(), tt.req)
			ae := apiErr(t, err, http.StatusBadRequest)
			if !strings.Contains(ae.Message, tt.want) {
				t.Errorf("error %q, want it to say %q", ae.Message, tt.want)
			}
		})
	}
	if c, _ := e.eng.Container(id); c.State != queue.Queued || c.Held || c.Priority != 1 {
		t.Errorf("a refused request changed %s: %+v", id, c)
	}
}

// TestInstanceVerbsWhileShuttingDown: once an instance is shutting down, a
// second kill or a hold/run/drain is refused (409) instead of answering
// as if it had done something.
func TestInstanceVerbsWhileShuttingDown(t *testing.T) {
	e := newEnv(t)
	_, inst := e.running("r")
	if _, err := e.client.InstanceVerb(t.Context(), inst, view.InstanceKill, ""); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []view.InstanceVerb{view.InstanceKill, view.InstanceRun, view.InstanceHold, view.InstanceDrain} {
		_, err := e.client.InstanceVerb(t.Context(), inst, verb, "")
		ae := apiErr(t, err, http.StatusConflict)
		if !strings.Contains(ae.Message, "is shutting down") {
			t.Errorf("%s: %q, want it to say the instance is shutting down", verb, ae.Message)
		}
	}
}

// TestBadDurationSaysWhatItWants: a duration that does not parse is named
// with what would, not with Go's parser's message.
func TestBadDurationSaysWhatItWants(t *testing.T) {
	e := newEnv(t)
	resp, data := e.do(http.MethodPost, "/v1/containers", strings.NewReader(`{"command":["x"],"scheduling":{"max_run_time":"banana"}}`), nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), `scheduling.max_run_time: want a duration such as`) || strings.Contains(string(data), "time: invalid") {
		t.Errorf("%d %s", resp.StatusCode, data)
	}
}

// TestPriorityZeroRequeuesRunning: priority 0 on a running container stops
// it and requeues it, saying why; it is neither Complete nor a failure.
func TestPriorityZeroRequeuesRunning(t *testing.T) {
	e := newEnv(t)
	id, _ := e.running("r")
	if _, err := e.client.SetPriority(t.Context(), id, 0); err != nil {
		t.Fatal(err)
	}
	e.until("r stopped", 60, func() bool { return e.state(id) != queue.Running })
	c, _ := e.eng.Container(id)
	if c.State != queue.Queued || !strings.Contains(c.Reason, "priority 0") || c.ExitCode != nil && *c.ExitCode != 0 && c.State.Final() {
		t.Fatalf("after priority 0: %s, exit %v, reason %q; want Queued, saying priority 0", c.State, c.ExitCode, c.Reason)
	}
}

// TestSpecVCPUsDefault: a spec without vcpus gets the one default submit's
// --vcpus has, alone or in a batch.
func TestSpecVCPUsDefault(t *testing.T) {
	e := newEnv(t)
	resp, data := e.do(http.MethodPost, "/v1/containers", strings.NewReader(`{"command":["x"]}`), nil)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(data), `"vcpus":1`) {
		t.Errorf("one spec: %d %s", resp.StatusCode, data)
	}
	resp, data = e.do(http.MethodPost, "/v1/containers", strings.NewReader(`[{"command":["x"]},{"command":["y"],"runtime_constraints":{"vcpus":2}}]`), nil)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(data), `"vcpus":1`) || !strings.Contains(string(data), `"vcpus":2`) {
		t.Errorf("a batch: %d %s", resp.StatusCode, data)
	}
}
