package api

import (
	"encoding/json"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// TestLabels covers labels and constraints through the API: a submit
// whose constraints no type has is a 422 naming them, labels are free
// metadata that the list selector label=k=v (repeatable, all must match)
// filters on, a malformed selector is a 400, and scheduling.labels (the
// constraints' old name) is a 400 that names scheduling.constraints.
func TestLabels(t *testing.T) {
	cfg := enginetest.Config(t)
	cfg.InstanceTypes[1].Labels = map[string]string{"gpu": "a100", "zone": "eu"}
	env := enginetest.New(t, cfg, fake.Options{}, engine.Options{})
	srv := httptest.NewServer(NewServer(ServerOptions{Engine: env.Engine, Token: testToken}))
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, testToken)
	e := &apiEnv{Env: env, t: t, srv: srv, client: c}

	zero := 0
	// Each is labelled with its own constraints, and team=x: labels are
	// not placement, so no type needs to have team.
	submit := func(name string, constraints map[string]string, supervisor bool) (view.Container, error) {
		labels := map[string]string{"team": "x"}
		maps.Copy(labels, constraints)
		return c.Submit(t.Context(), view.Spec{Name: name, Command: []string{"true"}, Priority: &zero, Labels: labels,
			Scheduling: queue.Scheduling{Constraints: constraints, Supervisor: supervisor}})
	}
	for _, s := range []struct {
		name   string
		labels map[string]string
	}{
		{"plain", nil},
		{"a100", map[string]string{"gpu": "a100"}},
		{"a100-eu", map[string]string{"gpu": "a100", "zone": "eu"}},
	} {
		got, err := submit(s.name, s.labels, s.name == "plain")
		if err != nil {
			t.Fatalf("submit %s: %v", s.name, err)
		}
		if !maps.Equal(got.Scheduling.Constraints, s.labels) || got.Scheduling.Supervisor != (s.name == "plain") || got.Labels["team"] != "x" {
			t.Fatalf("submit %s: stored scheduling %+v", s.name, got.Scheduling)
		}
	}

	_, err := submit("h100", map[string]string{"gpu": "h100"}, false)
	ae := apiErr(t, err, 422)
	if !strings.Contains(ae.Message, "no instance type has labels gpu=h100") || !strings.Contains(ae.Message, "labels gpu=a100 zone=eu") {
		t.Fatalf("422 message %q: want it to name the labels asked for and those of the types", ae.Message)
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?label=gpu=a100&sort=name", []string{"a100", "a100-eu"}},
		{"?label=gpu=a100&label=zone=eu", []string{"a100-eu"}},
		{"?label=zone=us", nil},
		{"?label=gpu=a100&q=eu", []string{"a100-eu"}},
	} {
		resp, data := e.req(t, "GET", "/v1/containers"+tc.query, nil, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", tc.query, resp.StatusCode, data)
		}
		var body struct {
			Items []view.Container `json:"items"`
		}
		if err := json.Unmarshal(data, &body); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range body.Items {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.query, names, tc.want)
		}
	}
	cs, n, err := c.Containers(t.Context(), ListQuery{Labels: []string{"zone=eu"}})
	if err != nil || n != 1 || len(cs) != 1 || cs[0].Name != "a100-eu" {
		t.Fatalf("client selector zone=eu: %v %d %v", cs, n, err)
	}

	for _, tc := range []struct{ query, want string }{
		{"?label=gpu", "want key=value"},
		{"?label==a100", "want key=value"},
		{"?label=gpu=a100&label=gpu=h100", "no container can match"},
	} {
		resp, data := e.req(t, "GET", "/v1/containers"+tc.query, nil, nil)
		if resp.StatusCode != 400 || !strings.Contains(string(data), tc.want) || !strings.Contains(string(data), `"label"`) {
			t.Errorf("%s: status %d %s, want 400 naming label: %q", tc.query, resp.StatusCode, data, tc.want)
		}
	}
	resp, data := e.req(t, "POST", "/v1/containers", strings.NewReader(`{"command":["x"],"scheduling":{"constraints":{"a=b":"c"}}}`), nil)
	if resp.StatusCode != 400 || !strings.Contains(string(data), "scheduling.constraints") {
		t.Errorf("constraint key with '=': status %d %s, want 400 naming scheduling.constraints", resp.StatusCode, data)
	}
	// An old client's labels were placement: refused, saying what they are now.
	resp, data = e.req(t, "POST", "/v1/containers", strings.NewReader(`{"command":["x"],"scheduling":{"labels":{"gpu":"a100"}}}`), nil)
	if resp.StatusCode != 400 || !strings.Contains(string(data), `"field":"scheduling.labels"`) || !strings.Contains(string(data), "--constraint") {
		t.Errorf("scheduling.labels: status %d %s, want 400 naming --constraint", resp.StatusCode, data)
	}
	resp, data = e.req(t, "POST", "/v1/containers", strings.NewReader(`{"command":["x"],"labels":{"team":"a,b"}}`), nil)
	if resp.StatusCode != 400 || !strings.Contains(string(data), `"field":"labels.team"`) {
		t.Errorf("label value with ',': status %d %s, want 400 naming labels.team", resp.StatusCode, data)
	}
}
