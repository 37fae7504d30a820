package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

const (
	testToken = "s3cret-token"
	gib       = enginetest.GiB
)

// apiEnv is an Engine on the fake driver with a fake clock, served by
// an httptest.Server, and a client for it.
type apiEnv struct {
	*enginetest.Env
	t      *testing.T
	clk    *clock.Fake
	cloud  *fake.Driver
	eng    *engine.Engine
	srv    *httptest.Server
	client *Client
	// followWaits receives (dropping when full) each time a follow
	// stream has written what there is and waits for the next poll.
	followWaits chan struct{}
}

func newEnv(t *testing.T) *apiEnv {
	t.Helper()
	env := enginetest.New(t, enginetest.Config(t), fake.Options{}, engine.Options{})
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "dispatch_up 1\n")
	})
	h := NewServer(ServerOptions{Engine: env.Engine, Token: testToken, Metrics: metrics}).(*server)
	h.followPoll = 5 * time.Millisecond
	waits := make(chan struct{}, 1)
	h.followWaiting = func() {
		select {
		case waits <- struct{}{}:
		default:
		}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // before the engine closes
	c := NewClient(srv.URL, testToken)
	c.Actor = "test:alice"
	return &apiEnv{Env: env, t: t, clk: env.Clock, cloud: env.Cloud, eng: env.Engine, srv: srv, client: c, followWaits: waits}
}

// followPolledSince returns once a follow stream has read the container
// from start to end after this call, and is still waiting for more: the
// first signal may come from a poll that began before the call, the
// second cannot.
func (e *apiEnv) followPolledSince() {
	e.t.Helper()
	select {
	case <-e.followWaits:
	default:
	}
	for range 2 {
		select {
		case <-e.followWaits:
		case <-time.After(wait.Budget(10 * time.Second)):
			e.t.Fatal("no follow stream polled within 10s")
		}
	}
}

// awaitFollow waits (with a deadline) for a follow stream to end.
func awaitFollow(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(wait.Budget(10 * time.Second)):
		t.Fatalf("follow did not end %s", what)
		return nil
	}
}

func (e *apiEnv) step(n int) { e.Step(n) }
func (e *apiEnv) until(what string, max int, cond func() bool) {
	e.t.Helper()
	e.Until(what, max, cond)
}

func (e *apiEnv) state(id string) queue.State {
	e.t.Helper()
	c, ok := e.eng.Container(id)
	if !ok {
		e.t.Fatalf("container %s not found", id)
	}
	return c.State
}

// submit adds a container through the engine (not the API).
func (e *apiEnv) submit(name string, cmd []string, prio int) string {
	e.t.Helper()
	c, err := e.eng.Submit(view.Spec{Name: name, Command: cmd, Priority: &prio,
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return c.ID
}

// running submits a container that runs until killed and steps until it
// runs; it returns the container and its instance.
func (e *apiEnv) running(name string) (string, string) {
	e.t.Helper()
	id := e.submit(name, []string{"run-forever"}, 1)
	e.until(name+" running", 30, func() bool { return e.state(id) == queue.Running })
	c, _ := e.eng.Container(id)
	return id, c.InstanceID
}

// do sends a raw request; hdr may override Authorization.
func (e *apiEnv) do(method, path string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	return e.req(e.t, method, path, body, hdr)
}

// req is do for subtests (failures are reported on t).
func (e *apiEnv) req(t *testing.T, method, path string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func apiErr(t *testing.T, err error, status int) *APIError {
	t.Helper()
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("want *APIError with status %d, got %v", status, err)
	}
	if ae.Status != status {
		t.Fatalf("status = %d, want %d (%s)", ae.Status, status, ae.Message)
	}
	return ae
}

// TestClientEndpoints drives every endpoint through the client.
func TestClientEndpoints(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.client

	// Submit through the API.
	prio := 5
	sub, err := c.Submit(ctx, view.Spec{Name: "web", Command: []string{"run-forever"}, Priority: &prio,
		RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib}})
	if err != nil {
		t.Fatal(err)
	}
	if sub.ID == "" || sub.State != queue.Queued || sub.Priority != 5 || sub.Name != "web" {
		t.Fatalf("submitted: %+v", sub)
	}
	got, err := c.Container(ctx, sub.ID)
	if err != nil || got.ID != sub.ID || got.Name != "web" {
		t.Fatalf("Container = %+v, %v", got, err)
	}

	// Types and summary.
	types, err := c.Types(ctx)
	if err != nil || len(types) != 2 || types[0].Name != "small" || types[1].Price != 4.0 {
		t.Fatalf("Types = %+v, %v", types, err)
	}
	sum, err := c.Summary(ctx)
	if err != nil || sum.Containers[queue.Queued] != 1 || sum.Paused || sum.Driver != "fake" {
		t.Fatalf("Summary = %+v, %v", sum, err)
	}

	// It runs: instances appear.
	e.until("web running", 30, func() bool { return e.state(sub.ID) == queue.Running })
	insts, err := c.Instances(ctx)
	if err != nil || len(insts) != 1 || insts[0].Type != "small" {
		t.Fatalf("Instances = %+v, %v", insts, err)
	}
	inst := string(insts[0].ID)
	if types, _ := c.Types(ctx); types[0].Count != 1 {
		t.Fatalf("small count = %d, want 1", types[0].Count)
	}

	// Logs of a running container, all and tail.
	var buf bytes.Buffer
	if err := c.Logs(ctx, sub.ID, 0, false, &buf); err != nil || !strings.Contains(buf.String(), "running run-forever") {
		t.Fatalf("Logs = %q, %v", buf.String(), err)
	}
	buf.Reset()
	if err := c.Logs(ctx, sub.ID, 1, false, &buf); err != nil || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("Logs tail 1 = %q, %v", buf.String(), err)
	}

	// Instance verbs.
	for _, tc := range []struct {
		verb view.InstanceVerb
		want worker.IdleBehavior
	}{{view.InstanceHold, worker.IdleHold}, {view.InstanceDrain, worker.IdleDrain}, {view.InstanceRun, worker.IdleRun}} {
		v, err := c.InstanceVerb(ctx, inst, tc.verb, "maintenance")
		if err != nil || v.IdleBehavior != tc.want || string(v.ID) != inst {
			t.Fatalf("%s: %+v, %v", tc.verb, v, err)
		}
	}

	// Container verbs and priority.
	held, err := c.ContainerVerb(ctx, sub.ID, view.ContainerHold, "")
	if err != nil || !held.Held {
		t.Fatalf("hold: %+v, %v", held, err)
	}
	rel, err := c.ContainerVerb(ctx, sub.ID, view.ContainerRelease, "ok now")
	if err != nil || rel.Held {
		t.Fatalf("release: %+v, %v", rel, err)
	}
	pr, err := c.SetPriority(ctx, sub.ID, 9)
	if err != nil || pr.Priority != 9 {
		t.Fatalf("priority: %+v, %v", pr, err)
	}

	// Scheduler pause / resume.
	if err := c.Pause(ctx, "upgrade"); err != nil {
		t.Fatal(err)
	}
	if sum, _ := c.Summary(ctx); !sum.Paused {
		t.Fatal("not paused after Pause")
	}
	if err := c.Resume(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if sum, _ := c.Summary(ctx); sum.Paused {
		t.Fatal("paused after Resume")
	}

	// Kill the container, then the instance.
	k, err := c.ContainerVerb(ctx, sub.ID, view.ContainerKill, "no longer needed")
	if err != nil || !k.KillRequested {
		t.Fatalf("kill: %+v, %v", k, err)
	}
	e.until("web cancelled", 30, func() bool { return e.state(sub.ID) == queue.Cancelled })
	kv, err := c.InstanceVerb(ctx, inst, view.InstanceKill, "retire")
	if err != nil || kv.State != worker.StateShutdown {
		t.Fatalf("kill instance: %+v, %v", kv, err)
	}

	// The event log has every verb, by the token's name (the client's
	// own X-Dispatch-Actor does not count once a token says who it is).
	evs, err := c.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	byAPI := map[string]bool{}
	for _, ev := range evs {
		if ev.Actor == "token:default" && ev.Kind == "verb" {
			byAPI[ev.Action] = true
		}
	}
	for _, want := range []string{"hold", "drain", "run", "release", "priority 9", "pause", "resume", "kill"} {
		if !byAPI[want] {
			t.Errorf("no %q event by token:default in %+v", want, evs)
		}
	}
	// since and limit page the log.
	page, err := c.Events(ctx, evs[0].Seq, 2)
	if err != nil || len(page) != 2 || page[0].Seq != evs[1].Seq {
		t.Fatalf("Events(since %d, 2) = %+v, %v", evs[0].Seq, page, err)
	}

	// Listing.
	list, n, err := c.Containers(ctx, ListQuery{States: []string{"Cancelled"}})
	if err != nil || n != 1 || len(list) != 1 || list[0].ID != sub.ID {
		t.Fatalf("Containers = %+v, %d, %v", list, n, err)
	}

	// /healthz needs no token; /metrics needs one (any role).
	for _, path := range []string{"/healthz", "/metrics"} {
		hdr := map[string]string{"Authorization": ""}
		if path == "/metrics" {
			hdr = nil
		}
		resp, data := e.do("GET", path, nil, hdr)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, resp.StatusCode, data)
		}
		if path == "/healthz" && string(data) != "ok" {
			t.Errorf("healthz = %q", data)
		}
	}
}

func TestNewClientBaseURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"127.0.0.1:9006", "http://127.0.0.1:9006"},
		{"http://127.0.0.1:9006", "http://127.0.0.1:9006"},
		{"https://d.example:443/", "https://d.example:443"},
		{" localhost:1 ", "http://localhost:1"},
	} {
		if got := NewClient(tc.in, "").BaseURL; got != tc.want {
			t.Errorf("NewClient(%q).BaseURL = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, path, auth string
		want             int
	}{
		{"no token", "/v1/summary", "", http.StatusUnauthorized},
		{"basic scheme", "/v1/summary", "Basic dXNlcjpwYXNz", http.StatusUnauthorized},
		{"empty bearer", "/v1/summary", "Bearer ", http.StatusUnauthorized},
		{"wrong token", "/v1/summary", "Bearer nope", http.StatusForbidden},
		{"token prefix", "/v1/summary", "Bearer " + testToken[:4], http.StatusForbidden},
		{"right token", "/v1/summary", "Bearer " + testToken, http.StatusOK},
		{"lower-case scheme", "/v1/summary", "bearer " + testToken, http.StatusOK},
		{"unknown path needs auth too", "/v1/nothing", "", http.StatusUnauthorized},
		{"healthz without token", "/healthz", "", http.StatusOK},
		{"metrics without token", "/metrics", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"Authorization": tc.auth}
			resp, data := e.req(t, "GET", tc.path, nil, hdr)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, data)
			}
			if tc.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
			}
			if tc.want >= 400 {
				var eb errorBody
				if err := json.Unmarshal(data, &eb); err != nil || eb.Error == "" {
					t.Errorf("error body %q: %v", data, err)
				}
			}
		})
	}

	// Through the client: APIError with the status.
	bad := NewClient(e.srv.URL, "wrong")
	_, err := bad.Summary(t.Context())
	apiErr(t, err, http.StatusForbidden)
	_, err = NewClient(e.srv.URL, "").Instances(t.Context())
	apiErr(t, err, http.StatusUnauthorized)
}

func TestNoTokenServer(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(NewServer(ServerOptions{Engine: e.eng}))
	defer srv.Close()
	if _, err := NewClient(srv.URL, "").Summary(t.Context()); err != nil {
		t.Fatal(err)
	}
	// No metrics handler: 404.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("/metrics = %d, want 404", resp.StatusCode)
	}
}

// TestErrors covers every error row of docs/design.md §7.2 and the query checks.
func TestErrors(t *testing.T) {
	e := newEnv(t)
	queued := e.submit("q", []string{"run-forever"}, 0) // priority 0: stays queued
	big := `{"command":["x"],"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name         string
		method, path string
		body         string
		want         int
		field        string
		msg          string // substring of the error
		types        int    // number of types listed (422)
	}{
		// malformed bodies: 400 naming the field
		{"bad type for vcpus", "POST", "/v1/containers", `{"command":["x"],"runtime_constraints":{"vcpus":"two"}}`, 400, "runtime_constraints.vcpus", "want an integer", 0},
		{"fractional vcpus", "POST", "/v1/containers", `{"command":["x"],"runtime_constraints":{"vcpus":1.5}}`, 400, "runtime_constraints.vcpus", "", 0},
		{"unknown field", "POST", "/v1/containers", `{"command":["x"],"colour":"blue"}`, 400, "colour", "unknown field", 0},
		{"unknown nested field", "POST", "/v1/containers", `{"command":["x"],"runtime_constraints":{"cpus":2}}`, 400, "runtime_constraints.cpus", "unknown field", 0},
		{"negative ram", "POST", "/v1/containers", `{"command":["x"],"runtime_constraints":{"ram":-1}}`, 400, "runtime_constraints.ram", "must not be negative", 0},
		{"empty command", "POST", "/v1/containers", `{"command":[]}`, 400, "command", "", 0},
		{"bad restart policy", "POST", "/v1/containers", `{"command":["x"],"restart_policy":"always"}`, 400, "restart_policy", "", 0},
		{"bad duration", "POST", "/v1/containers", `{"command":["x"],"scheduling":{"max_run_time":"soon"}}`, 400, "scheduling.max_run_time", "", 0},
		{"command not a list", "POST", "/v1/containers", `{"command":"echo hi"}`, 400, "command", "want an array", 0},
		{"syntax error", "POST", "/v1/containers", `{"command":["x"],}`, 400, "", "malformed JSON", 0},
		{"truncated", "POST", "/v1/containers", `{"command":["x"`, 400, "", "malformed JSON", 0},
		{"not an object", "POST", "/v1/containers", `42`, 400, "", "", 0},
		{"trailing data", "POST", "/v1/containers", `{"command":["x"]} {}`, 400, "", "after the JSON value", 0},
		{"empty body", "POST", "/v1/containers", ``, 400, "", "required", 0},
		{"body over 1 MiB", "POST", "/v1/containers", big, 413, "", "1 MiB", 0},
		{"verb body over 1 MiB", "POST", "/v1/containers/" + queued + "/hold", `{"reason":"` + strings.Repeat("r", MaxBodyBytes) + `"}`, 413, "", "", 0},
		{"verb body unknown field", "POST", "/v1/containers/" + queued + "/hold", `{"why":"x"}`, 400, "why", "", 0},
		{"no type fits", "POST", "/v1/containers", `{"command":["x"],"runtime_constraints":{"ram":1099511627776}}`, 422, "", "no instance type fits", 2},
		{"no type fits gpus", "POST", "/v1/containers", `{"command":["x"],"runtime_constraints":{"gpus":4}}`, 422, "", "", 2},
		// PATCH
		{"patch without priority", "PATCH", "/v1/containers/" + queued, `{}`, 400, "priority", "required", 0},
		{"patch empty body", "PATCH", "/v1/containers/" + queued, ``, 400, "", "required", 0},
		{"patch priority not a number", "PATCH", "/v1/containers/" + queued, `{"priority":"high"}`, 400, "priority", "", 0},
		{"patch negative priority", "PATCH", "/v1/containers/" + queued, `{"priority":-3}`, 400, "priority", "", 0},
		{"patch unknown field", "PATCH", "/v1/containers/" + queued, `{"priority":1,"held":true}`, 400, "held", "", 0},
		// unknown ids: 404
		{"unknown container", "GET", "/v1/containers/c-doesnotexist", ``, 404, "", "no such container", 0},
		{"unknown container hold", "POST", "/v1/containers/c-doesnotexist/hold", ``, 404, "", "", 0},
		{"unknown container kill", "POST", "/v1/containers/c-doesnotexist/kill", `{"reason":"x"}`, 404, "", "", 0},
		{"unknown container patch", "PATCH", "/v1/containers/c-doesnotexist", `{"priority":1}`, 404, "", "", 0},
		{"unknown container logs", "GET", "/v1/containers/c-doesnotexist/logs", ``, 404, "", "", 0},
		{"unknown instance hold", "POST", "/v1/instances/i-nope/hold", ``, 404, "", "instance not found", 0},
		{"unknown instance kill", "POST", "/v1/instances/i-nope/kill", `{"reason":"x"}`, 404, "", "", 0},
		{"unknown instance verb", "POST", "/v1/instances/i-nope/explode", ``, 404, "", "unknown instance verb", 0},
		{"unknown container verb", "POST", "/v1/containers/" + queued + "/explode", ``, 404, "", "unknown container verb", 0},
		{"unknown scheduler verb", "POST", "/v1/scheduler/stop", ``, 404, "", "", 0},
		{"unknown endpoint", "GET", "/v2/things", ``, 404, "", "no such endpoint", 0},
		{"method not allowed", "DELETE", "/v1/containers", ``, 405, "", "not allowed", 0},
		// logs of a container that never ran
		{"no logs yet", "GET", "/v1/containers/" + queued + "/logs", ``, 404, "", "no output yet: the container is Queued", 0},
		// bad query parameters: 400 naming the parameter
		{"unknown state", "GET", "/v1/containers?state=Sleeping", ``, 400, "state", "Sleeping", 0},
		{"unknown state in list", "GET", "/v1/containers?state=Queued,Nope", ``, 400, "state", "Nope", 0},
		{"negative offset", "GET", "/v1/containers?offset=-1", ``, 400, "offset", "", 0},
		{"offset not a number", "GET", "/v1/containers?offset=ten", ``, 400, "offset", "", 0},
		{"limit not a number", "GET", "/v1/containers?limit=lots", ``, 400, "limit", "", 0},
		{"negative limit", "GET", "/v1/containers?limit=-5", ``, 400, "limit", "", 0},
		{"unknown sort", "GET", "/v1/containers?sort=size", ``, 400, "sort", "", 0},
		{"bad query escape", "GET", "/v1/containers?q=%zz", ``, 400, "", "malformed query", 0},
		{"events since not a number", "GET", "/v1/events?since=yesterday", ``, 400, "since", "", 0},
		{"events negative since", "GET", "/v1/events?since=-1", ``, 400, "since", "", 0},
		{"events bad limit", "GET", "/v1/events?limit=x", ``, 400, "limit", "", 0},
		{"logs bad tail", "GET", "/v1/containers/" + queued + "/logs?tail=x", ``, 400, "tail", "", 0},
		{"logs negative tail", "GET", "/v1/containers/" + queued + "/logs?tail=-2", ``, 400, "tail", "", 0},
		{"logs bad follow", "GET", "/v1/containers/" + queued + "/logs?follow=maybe", ``, 400, "follow", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := e.req(t, tc.method, tc.path, strings.NewReader(tc.body), nil)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, data)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var eb errorBody
			if err := json.Unmarshal(data, &eb); err != nil || eb.Error == "" {
				t.Fatalf("error body %q: %v", data, err)
			}
			if eb.Field != tc.field {
				t.Errorf("field = %q, want %q (%s)", eb.Field, tc.field, eb.Error)
			}
			if tc.field != "" && !strings.Contains(eb.Error, tc.field) {
				t.Errorf("message %q does not name %q", eb.Error, tc.field)
			}
			if !strings.Contains(eb.Error, tc.msg) {
				t.Errorf("message %q does not contain %q", eb.Error, tc.msg)
			}
			if len(eb.Types) != tc.types {
				t.Errorf("types = %q, want %d", eb.Types, tc.types)
			}
		})
	}
	// Nothing was stored by the bad submissions, and the queued container
	// is untouched.
	if _, n := e.eng.Containers(engine.ListOptions{}); n != 1 {
		t.Errorf("%d containers, want 1", n)
	}
	if c, _ := e.eng.Container(queued); c.Held || c.Priority != 0 {
		t.Errorf("queued container changed: %+v", c)
	}
}

// TestClientErrors checks the client's APIError carries field and types.
func TestClientErrors(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	_, err := e.client.Submit(ctx, view.Spec{Command: []string{"x"}, RuntimeConstraints: queue.Constraints{RAM: -1}})
	if ae := apiErr(t, err, 400); ae.Field != "runtime_constraints.ram" {
		t.Errorf("field = %q", ae.Field)
	}
	_, err = e.client.Submit(ctx, view.Spec{Command: []string{"x"}, RuntimeConstraints: queue.Constraints{VCPUs: 64}})
	if ae := apiErr(t, err, 422); len(ae.Types) != 2 || !strings.HasPrefix(ae.Types[0], "small") {
		t.Errorf("types = %q", ae.Types)
	}
	_, err = e.client.Container(ctx, "c-missing")
	apiErr(t, err, 404)
	_, err = e.client.InstanceVerb(ctx, "i-missing", view.InstanceDrain, "")
	apiErr(t, err, 404)
	err = e.client.Logs(ctx, "c-missing", 0, true, io.Discard)
	apiErr(t, err, 404)
}

// TestConflictOnFinal: verbs on a Complete or Cancelled container are 409.
func TestConflictOnFinal(t *testing.T) {
	e := newEnv(t)
	done := e.submit("done", []string{"true"}, 1)
	e.until("done complete", 30, func() bool { return e.state(done) == queue.Complete })
	cancelled := e.submit("cancelled", []string{"run-forever"}, 0)
	if _, err := e.client.ContainerVerb(t.Context(), cancelled, view.ContainerKill, ""); err != nil {
		t.Fatal(err)
	}
	if st := e.state(cancelled); st != queue.Cancelled {
		t.Fatalf("killed queued container is %s", st)
	}
	for _, tc := range []struct {
		name, id, method, verb, body string
	}{
		{"hold complete", done, "POST", "hold", ""},
		{"release complete", done, "POST", "release", ""},
		{"kill complete", done, "POST", "kill", `{"reason":"late"}`},
		{"priority complete", done, "PATCH", "", `{"priority":3}`},
		{"hold cancelled", cancelled, "POST", "hold", ""},
		{"kill cancelled", cancelled, "POST", "kill", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/containers/" + tc.id
			if tc.verb != "" {
				path += "/" + tc.verb
			}
			resp, data := e.req(t, tc.method, path, strings.NewReader(tc.body), nil)
			if resp.StatusCode != http.StatusConflict {
				t.Fatalf("status %d, want 409: %s", resp.StatusCode, data)
			}
		})
	}
	_, err := e.client.ContainerVerb(t.Context(), done, view.ContainerHold, "")
	apiErr(t, err, http.StatusConflict)
}

// TestListContainers: paging, filtering and sorting.
func TestListContainers(t *testing.T) {
	e := newEnv(t)
	// Priority 0: nothing is scheduled, so states only change by verbs.
	ids := map[string]string{}
	for i := range 12 {
		name := fmt.Sprintf("job-%02d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("special-%02d", i)
		}
		ids[name] = e.submit(name, []string{"run-forever", fmt.Sprint(i)}, 0)
	}
	// Different priorities (PATCH keeps them queued: pause the scheduler).
	if err := e.client.Pause(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		name := fmt.Sprintf("job-%02d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("special-%02d", i)
		}
		if _, err := e.client.SetPriority(t.Context(), ids[name], i); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"job-01", "job-02"} {
		if _, err := e.client.ContainerVerb(t.Context(), ids[name], view.ContainerKill, ""); err != nil {
			t.Fatal(err)
		}
	}
	e.step(2)

	names := func(cs []view.Container) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		query     string
		wantN     int
		wantNames []string // nil: only check the count of items
		wantLen   int
	}{
		{"all", "", 12, nil, 12},
		{"first page", "?sort=name&limit=5", 12, []string{"job-01", "job-02", "job-04", "job-05", "job-07"}, 5},
		{"second page", "?sort=name&limit=5&offset=5", 12, []string{"job-08", "job-10", "job-11", "special-00", "special-03"}, 5},
		{"last page", "?sort=name&limit=5&offset=10", 12, []string{"special-06", "special-09"}, 2},
		{"offset past the end", "?offset=100", 12, nil, 0},
		{"q substring of name", "?q=special&sort=name", 4, []string{"special-00", "special-03", "special-06", "special-09"}, 4},
		{"q substring of command", "?q=run-forever&limit=1", 12, nil, 1},
		{"state filter", "?state=Cancelled&sort=name", 2, []string{"job-01", "job-02"}, 2},
		{"state lower case", "?state=cancelled", 2, nil, 2},
		{"state comma list", "?state=Queued,Cancelled", 12, nil, 12},
		{"state repeated", "?state=Running&state=Cancelled", 2, nil, 2},
		{"state none match", "?state=Complete", 0, nil, 0},
		{"sort -priority", "?sort=-priority&limit=3", 12, []string{"job-11", "job-10", "special-09"}, 3},
		{"sort priority", "?sort=priority&limit=2", 12, []string{"special-00", "job-01"}, 2},
		{"sort -name with q", "?sort=-name&q=job-1", 2, []string{"job-11", "job-10"}, 2},
		{"limit above the cap", "?limit=20000", 12, nil, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := e.req(t, "GET", "/v1/containers"+tc.query, nil, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			var body struct {
				Items          []view.Container `json:"items"`
				ItemsAvailable *int             `json:"items_available"`
			}
			if err := json.Unmarshal(data, &body); err != nil {
				t.Fatal(err)
			}
			if body.Items == nil {
				t.Fatalf("items is null: %s", data)
			}
			if body.ItemsAvailable == nil || *body.ItemsAvailable != tc.wantN {
				t.Fatalf("items_available = %v, want %d", body.ItemsAvailable, tc.wantN)
			}
			if len(body.Items) != tc.wantLen {
				t.Fatalf("%d items, want %d: %v", len(body.Items), tc.wantLen, names(body.Items))
			}
			if tc.wantNames != nil && !slices.Equal(names(body.Items), tc.wantNames) {
				t.Fatalf("names = %v, want %v", names(body.Items), tc.wantNames)
			}
		})
	}

	// The same through the client.
	cs, n, err := e.client.Containers(t.Context(), ListQuery{States: []string{"Queued"}, Q: "job", Sort: "-priority", Offset: 1, Limit: 2})
	if err != nil || n != 6 || !slices.Equal(names(cs), []string{"job-10", "job-08"}) {
		t.Fatalf("Containers = %v, %d, %v", names(cs), n, err)
	}
	_, _, err = e.client.Containers(t.Context(), ListQuery{States: []string{"Bogus"}})
	if ae := apiErr(t, err, 400); ae.Field != "state" {
		t.Errorf("field = %q", ae.Field)
	}
}

// TestLogsFollow: a follow stream writes each line once and ends when the
// container completes.
func TestLogsFollow(t *testing.T) {
	e := newEnv(t)
	id := e.submit("follow-me", fake.Cmd(5*time.Second, 3), 1)

	var out enginetest.Buffer
	done := make(chan error, 1)
	go func() { done <- e.client.Logs(t.Context(), id, 0, true, &out) }()

	// Queued: the stream waits without output.
	e.step(1)
	e.followPolledSince()
	select {
	case err := <-done:
		t.Fatalf("follow ended while queued: %v %q", err, out.String())
	default:
	}
	if got := out.String(); got != "" {
		t.Fatalf("output while queued: %q", got)
	}
	e.until("running", 30, func() bool { return e.state(id) == queue.Running })
	wait.Until(t, "the running line", 10*time.Second, func() bool { return strings.Contains(out.String(), "running") })

	// Step until the container has completed and its output is stored:
	// then the stream has all there will be and ends.
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
	if st := e.state(id); st != queue.Complete {
		t.Fatalf("stream ended with the container %s", st)
	}
	got := out.String()
	if strings.Count(got, "running") != 1 || strings.Count(got, "exited 3") != 1 {
		t.Fatalf("output %q: want one running and one exited line", got)
	}

	// Following a finished container prints its output and returns.
	var again bytes.Buffer
	if err := e.client.Logs(t.Context(), id, 1, true, &again); err != nil || !strings.Contains(again.String(), "exited 3") || strings.Contains(again.String(), "running") {
		t.Fatalf("follow of a complete container (tail 1) = %q, %v", again.String(), err)
	}
}

// TestLogsFollowNeverRan: a container killed before it ran ends the stream.
func TestLogsFollowNeverRan(t *testing.T) {
	e := newEnv(t)
	id := e.submit("never", []string{"run-forever"}, 0)
	var out enginetest.Buffer
	done := make(chan error, 1)
	go func() { done <- e.client.Logs(t.Context(), id, 0, true, &out) }()
	e.followPolledSince() // the stream waits for the queued container
	if _, err := e.client.ContainerVerb(t.Context(), id, view.ContainerKill, ""); err != nil {
		t.Fatal(err)
	}
	if err := awaitFollow(t, done, "after the container was cancelled"); err != nil || out.String() != "" {
		t.Fatalf("follow = %q, %v", out.String(), err)
	}
}

// TestLogsFollowClientGoesAway: cancelling the request ends the stream.
func TestLogsFollowClientGoesAway(t *testing.T) {
	e := newEnv(t)
	id, _ := e.running("forever")
	ctx, cancel := context.WithCancel(t.Context())
	var out enginetest.Buffer
	done := make(chan error, 1)
	go func() { done <- e.client.Logs(ctx, id, 0, true, &out) }()
	wait.Until(t, "output", 10*time.Second, func() bool { return strings.Contains(out.String(), "running") })
	cancel()
	if err := awaitFollow(t, done, "after the client went away"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestLogTracker(t *testing.T) {
	type read struct{ out, want string }
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"grows", []read{{"a\n", "a\n"}, {"a\nb\n", "b\n"}, {"a\nb\n", ""}, {"a\nb\nc", "c"}, {"a\nb\ncd\n", "d\n"}}},
		{"empty first", []read{{"", ""}, {"x\n", "x\n"}}},
		{"switch to a shorter stored tail", []read{{"1\n2\n3\n", "1\n2\n3\n"}, {"2\n3\n4\n", "4\n"}, {"3\n4\n", ""}}},
		{"stored tail starts after the seen output", []read{{"1\n", "1\n"}, {"5\n6\n", "5\n6\n"}}},
		{"repeated lines are not written twice", []read{{"x\nx\n", "x\nx\n"}, {"x\nx\nx\n", "x\n"}}},
		{"new attempt starts over", []read{{"attempt 1\n", "attempt 1\n"}, {"attempt 2\n", "attempt 2\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr logTracker
			for i, r := range tc.reads {
				if got := string(tr.next([]byte(r.out))); got != r.want {
					t.Fatalf("read %d (%q): got %q, want %q", i, r.out, got, r.want)
				}
			}
		})
	}
	// A window's worth of output, then a shorter tail of it: nothing new.
	long := bytes.Repeat([]byte("0123456789abcdef\n"), 3*logWindow/17)
	var tr logTracker
	tr.next(long)
	if got := tr.next(long[len(long)/2:]); len(got) != 0 {
		t.Fatalf("tail of the same output: got %d new bytes", len(got))
	}
}

// TestActor: a server without tokens (tests only) records the client's
// sanitised X-Dispatch-Actor; an authenticated client is its token's name.
func TestActor(t *testing.T) {
	e := newEnv(t)
	anon := httptest.NewServer(NewServer(ServerOptions{Engine: e.eng}))
	defer anon.Close()
	id := e.submit("a", []string{"run-forever"}, 0)
	for _, tc := range []struct {
		header, want string
		token        bool
	}{
		{"", "api", false},
		{"cli:alice", "api:cli:alice", false},
		{"bob@example.com", "api:bob@example.com", false},
		{"evil name <x>/y \u00e9", "api:evil_name__x__y__", false},
		{strings.Repeat("z", 100), "api:" + strings.Repeat("z", 64), false},
		{"  ", "api", false},
		{"cli:mallory", "token:default", true},
	} {
		t.Run(tc.want, func(t *testing.T) {
			var since uint64
			if before, _ := e.eng.Events(0, MaxListLimit); len(before) > 0 {
				since = before[len(before)-1].Seq
			}
			base := anon.URL
			if tc.token {
				base = e.srv.URL
			}
			req, err := http.NewRequestWithContext(t.Context(), "POST", base+"/v1/containers/"+id+"/hold", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(ActorHeader, tc.header)
			if tc.token {
				req.Header.Set("Authorization", "Bearer "+testToken)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			evs, _ := e.eng.Events(since, 0)
			if len(evs) != 1 || evs[0].Actor != tc.want || evs[0].Action != "hold" {
				t.Fatalf("events = %+v, want one hold by %q", evs, tc.want)
			}
		})
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		tokens int
		tls    bool
		want   string // "" = ok; else a part of the error
	}{
		{"127.0.0.1:9006", 1, false, ""},
		{"127.3.4.5:9006", 1, false, ""},
		{"[::1]:1", 1, false, ""},
		{"localhost:1", 1, false, ""},
		{"LOCALHOST:1", 1, true, ""},
		{"127.0.0.1:9006", 0, false, "without a token"},
		{"0.0.0.0:9006", 0, true, "without a token"},
		{"0.0.0.0:9006", 1, false, "plain HTTP"},
		{":9006", 1, false, "plain HTTP"},
		{"[::]:9006", 1, false, "plain HTTP"},
		{"10.0.0.5:9006", 1, false, "plain HTTP"},
		{"example.com:9006", 1, false, "plain HTTP"},
		{"10.0.0.5:9006", 1, true, ""},
		{"0.0.0.0:9006", 2, true, ""},
		{"127.0.0.1", 1, false, "host:port"},
	} {
		err := CheckListen(tc.addr, tc.tokens, tc.tls)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckListen(%q, %d, %v) = %v, want %q", tc.addr, tc.tokens, tc.tls, err, tc.want)
		}
	}
}

// TestRequestLog: every request is logged at debug level.
func TestRequestLog(t *testing.T) {
	e := newEnv(t)
	var logs enginetest.Buffer
	log := slogText(&logs)
	srv := httptest.NewServer(NewServer(ServerOptions{Engine: e.eng, Token: testToken, Logger: log}))
	defer srv.Close()
	if _, err := NewClient(srv.URL, "bad").Summary(t.Context()); err == nil {
		t.Fatal("no error with a bad token")
	}
	wait.Until(t, "log line", 10*time.Second, func() bool { return strings.Contains(logs.String(), "status=403") })
	for _, want := range []string{"method=GET", "path=/v1/summary", "duration="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}
}

func slogText(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
