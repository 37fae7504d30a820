package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// fakeServer answers the API from handlers and records every request.
type fakeServer struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method, path string
	query        url.Values
	body         string
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *fakeServer {
	f := &fakeServer{t: t}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.Query(), string(body)})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		handle(w, r, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// runCLI runs the client commands with args against server and returns
// the exit code, stdout and stderr.
func runCLI(t *testing.T, server string, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return runCLICtx(context.Background(), t, server, env, stdin, args...)
}

func runCLICtx(ctx context.Context, t *testing.T, server string, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin), Server: server, Token: "t",
		Getenv: func(k string) string { return env[k] }, WatchInterval: time.Millisecond, Now: testNow}
	root := &cobra.Command{Use: "dispatch-tui"}
	Configure(root)
	root.SetOut(&out)
	root.SetErr(&errb)
	BindGlobalFlags(root.PersistentFlags(), e)
	AddCommands(root, e)
	code := Execute(ctx, root, args, &errb)
	return code, out.String(), errb.String()
}

func writeJSONTo(w http.ResponseWriter, v any) { json.NewEncoder(w).Encode(v) }

// submitted answers POST /v1/containers with a new id.
func submitted(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/containers" {
		http.Error(w, `{"error":"unexpected"}`, 500)
		return
	}
	var specs []json.RawMessage
	if json.Unmarshal(body, &specs) == nil {
		// A bulk submission: a list of as many containers.
		items := make([]view.Container, len(specs))
		for i := range items {
			items[i] = view.Container{ContainerBody: view.ContainerBody{ID: "c-0123456789abcdef"}, State: queue.Queued}
		}
		writeJSONTo(w, map[string]any{"items": items})
		return
	}
	writeJSONTo(w, view.Container{ContainerBody: view.ContainerBody{ID: "c-0123456789abcdef"}, State: queue.Queued})
}

// TestSubmitFlagsReachTheSpec: each submit flag lands in the spec the API
// receives; --preemptible only when given.
func TestSubmitFlagsReachTheSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want map[string]any // JSON path (dots) -> value; nil value = absent
	}{
		{"labels and supervisor", []string{"--label", "team=gen", "--label", "stage=align", "--supervisor", "--", "true"},
			map[string]any{"labels.team": "gen", "labels.stage": "align", "scheduling.constraints": nil, "scheduling.labels": nil, "scheduling.supervisor": true, "scheduling.preemptible": nil, "health_check": nil}},
		{"constraints", []string{"--constraint", "gpu=a100", "--label", "team=gen", "--", "true"},
			map[string]any{"scheduling.constraints.gpu": "a100", "labels.team": "gen", "labels.gpu": nil}},
		{"preemptible given", []string{"--preemptible", "--", "true"}, map[string]any{"scheduling.preemptible": true, "scheduling.supervisor": nil}},
		{"preemptible false", []string{"--preemptible=false", "--", "true"}, map[string]any{"scheduling.preemptible": false}},
		{"ram with a unit", []string{"--ram", "512MiB", "--", "true"}, map[string]any{"runtime_constraints.ram": float64(512 << 20)}},
		{"health check", []string{"--health-cmd", "curl -fs localhost/health", "--health-interval", "30s", "--health-timeout", "5s", "--health-retries", "3", "--", "srv"},
			map[string]any{"health_check.command": []any{"sh", "-c", "curl -fs localhost/health"}, "health_check.interval": "30s", "health_check.timeout": "5s", "health_check.retries": float64(3)}},
		{"health check defaults", []string{"--health-cmd", "true", "--", "srv"},
			map[string]any{"health_check.command": []any{"sh", "-c", "true"}, "health_check.interval": nil, "health_check.retries": nil}},
		{"the rest", []string{"--vcpus", "2", "--ram", "2GiB", "--priority", "0", "--env", "A=1", "--name", "n", "--max-run-time", "1m", "--", "echo", "hi"},
			map[string]any{"runtime_constraints.vcpus": float64(2), "runtime_constraints.ram": float64(2 << 30), "priority": float64(0), "env.A": "1", "name": "n",
				"scheduling.max_run_time": "1m0s", "command": []any{"echo", "hi"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, submitted)
			code, out, errOut := runCLI(t, f.srv.URL, nil, "", append([]string{"submit"}, tc.args...)...)
			if code != 0 || strings.TrimSpace(out) != "c-0123456789abcdef" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(reqs[0].body), &body); err != nil {
				t.Fatal(err)
			}
			for path, want := range tc.want {
				got, ok := lookup(body, path)
				if want == nil && ok || want != nil && fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s = %v (present %v), want %v\nbody %s", path, got, ok, want, reqs[0].body)
				}
			}
		})
	}
}

func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// TestUsageErrorsPrintOnce: a usage error is one message (and a hint),
// exit 2, and nothing reaches the server.
func TestUsageErrorsPrintOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--ram", "lots", "--", "true"}, `invalid argument "lots" for "--ram"`},
		{[]string{"submit"}, "no command"},
		{[]string{"submit", "--health-retries", "2", "--", "x"}, "need --health-cmd"},
		{[]string{"submit", "--label", "novalue", "--", "x"}, "--label wants K=V"},
		{[]string{"submit", "-f", "x.jsonl", "--vcpus", "2"}, "--vcpus describes one container"},
		{[]string{"kill", "c-38613a4f"}, "c-38613a4f looks like a container id but is not one"},
		{[]string{"drain", "c-0123456789abcdef"}, "drain applies to instances; c-0123456789abcdef is a container"},
		{[]string{"ls", "containers", "-l", "nokey"}, "--label wants KEY=VALUE"},
		{[]string{"ls", "bogus"}, `cannot list "bogus"`},
		{[]string{"ls", "instances", "-o", "xml"}, "-o must be one of"},
		{[]string{"hold"}, "at least one id"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := newFake(t, submitted)
			code, out, errOut := runCLI(t, f.srv.URL, nil, "", tc.args...)
			if code != 2 || out != "" || strings.Count(errOut, tc.want) != 1 || strings.Count(errOut, "\n") != 2 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q once, plus a hint", code, out, errOut, tc.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
}

// TestSubmitFile: -f reads JSON lines, a YAML list or a JSON list (or
// stdin), checks every spec first, and sends them in one bulk request
// (one spec: a plain submit).
func TestSubmitFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, file, stdin string
		code              int
		sent              int    // containers submitted
		want              string // in the first request body, or in stderr
	}{
		{"json lines", write("a.jsonl", "{\"command\":[\"true\"],\"name\":\"a\"}\n\n{\"command\":[\"false\"],\"scheduling\":{\"supervisor\":true}}\n"), "", 0, 2, `"name":"a"`},
		{"yaml list", write("b.yaml", "- command: [echo, hi]\n  runtime_constraints: {vcpus: 2}\n- command: [\"true\"]\n  health_check: {command: [sh, -c, ok]}\n- command: [x]\n"), "", 0, 3, `"vcpus":2`},
		{"json list", write("c.json", `[{"command":["a"]},{"command":["b"]}]`), "", 0, 2, `"command":["a"]`},
		{"stdin", "-", "{\"command\":[\"from-stdin\"]}\n", 0, 1, "from-stdin"},
		{"bad spec sends none", write("d.jsonl", "{\"command\":[\"ok\"]}\n{\"command\":[]}\n"), "", 2, 0, "spec 2: command"},
		{"not json", write("e.jsonl", "{\"command\":[\"ok\"]}\n{oops\n"), "", 2, 0, "e.jsonl:2"},
		{"missing file", filepath.Join(dir, "nope"), "", 1, 0, "nope"},
		{"misspelt field named", write("f.jsonl", "{\"comand\":[\"true\"]}\n"), "", 2, 0, "spec 1: comand: unknown field"},
		{"every bad spec named", write("g.jsonl", "{\"command\":[]}\n{\"command\":[\"ok\"]}\n{\"command\":true}\n"), "", 2, 0,
			"2 specs refused, none sent:\n  spec 1: command: must not be empty\n  spec 3: command: want an array, got bool"},
		{"sizes with units", write("h.yaml", "- command: [x]\n  runtime_constraints: {ram: 2GiB, scratch: 10GiB}\n"), "", 0, 1, `"ram":2147483648`},
		{"bad size", write("i.yaml", "- command: [x]\n  runtime_constraints: {ram: 2Gx}\n"), "", 2, 0, `spec 1: runtime_constraints.ram: invalid size "2Gx"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, submitted)
			code, out, errOut := runCLI(t, f.srv.URL, nil, tc.stdin, "submit", "-f", tc.file)
			reqs := f.requests()
			if code != tc.code || min(tc.sent, 1) != len(reqs) || strings.Count(out, "c-0123456789abcdef") != tc.sent {
				t.Fatalf("exit %d, %d requests, stdout %q, stderr %q; want %d, %d containers in at most one request", code, len(reqs), out, errOut, tc.code, tc.sent)
			}
			if tc.sent > 1 && !strings.HasPrefix(reqs[0].body, "[") {
				t.Fatalf("%d specs not sent as one bulk submission: %s", tc.sent, reqs[0].body)
			}
			if tc.sent > 0 && !strings.Contains(reqs[0].body, tc.want) || tc.sent == 0 && !strings.Contains(errOut, tc.want) {
				t.Fatalf("want %q in the first body or stderr: %v / %q", tc.want, reqs, errOut)
			}
			if tc.name == "json lines" && !strings.Contains(reqs[0].body, `"supervisor":true`) {
				t.Fatalf("a field of the file is lost: %s", reqs[0].body)
			}
		})
	}
}

// A file larger than one request takes goes in several bulk requests,
// each within the server's limits; a refused one stops the run, naming
// the refused specs by their place in the file.
func TestSubmitFileInBatches(t *testing.T) {
	var lines strings.Builder
	for i := range 12000 {
		fmt.Fprintf(&lines, "{\"command\":[\"echo\",\"%d\"]}\n", i)
	}
	p := filepath.Join(t.TempDir(), "many.jsonl")
	if err := os.WriteFile(p, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, submitted)
	code, out, errOut := runCLI(t, f.srv.URL, nil, "", "submit", "-f", p)
	reqs := f.requests()
	if code != 0 || strings.Count(out, "\n") != 12000 || len(reqs) != 3 {
		t.Fatalf("exit %d, %d ids, %d requests, stderr %q; want 0, 12000 ids in 3 requests", code, strings.Count(out, "\n"), len(reqs), errOut)
	}
	for _, r := range reqs {
		var specs []json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &specs); err != nil || len(specs) > api.MaxBatchItems || len(r.body) > api.MaxBodyBytes {
			t.Fatalf("a request of %d specs, %d bytes (%v): over the server's limits", len(specs), len(r.body), err)
		}
	}

	calls := 0
	f = newFake(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if calls++; calls == 2 {
			w.WriteHeader(422)
			writeJSONTo(w, map[string]any{"error": "1 of 5000 containers refused", "items": []map[string]any{{"index": 7, "error": "command: must not be empty"}}})
			return
		}
		submitted(w, r, body)
	})
	code, out, errOut = runCLI(t, f.srv.URL, nil, "", "submit", "-f", p)
	if code != 1 || strings.Count(out, "\n") != 5000 || !strings.Contains(errOut, "specs 5001-10000 of 12000 refused (5000 submitted before them, nothing after)") ||
		!strings.Contains(errOut, "spec 5008: command: must not be empty") {
		t.Fatalf("exit %d, %d ids, stderr %q", code, strings.Count(out, "\n"), errOut)
	}
}

// TestNoFitListsTypesOnce: the engine's message names the types and so
// does the error's list: the CLI shows them once.
func TestNoFitListsTypesOnce(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.WriteHeader(422)
		writeJSONTo(w, map[string]any{"error": "no instance type fits: 64 vCPUs (types: small, large)", "types": []string{"small", "large"}})
	})
	code, _, errOut := runCLI(t, f.srv.URL, nil, "", "submit", "--vcpus", "64", "--", "x")
	if code != 5 || strings.Count(errOut, "large") != 1 || !strings.Contains(errOut, "instance types: small") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// pagedContainers serves n containers, limit at a time, with a continue
// token while more remain (withToken) or items_available only.
func pagedContainers(n int, withToken bool) func(w http.ResponseWriter, r *http.Request, _ []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		q := r.URL.Query()
		start, _ := strconv.Atoi(q.Get("continue"))
		if !withToken {
			start, _ = strconv.Atoi(q.Get("offset"))
		}
		limit, _ := strconv.Atoi(q.Get("limit"))
		end := n
		if limit > 0 && start+limit < n {
			end = start + limit
		}
		var items []view.Container
		for i := start; i < end; i++ {
			items = append(items, view.Container{ContainerBody: view.ContainerBody{ID: fmt.Sprintf("c-%016x", i)}, State: queue.Queued})
		}
		if withToken && end < n {
			w.Header().Set("X-Continue-Token", strconv.Itoa(end))
		}
		writeJSONTo(w, map[string]any{"items": items, "items_available": n})
	}
}

// TestListContainersPages: ls containers follows the continue token
// --chunk-size at a time (or the offset, from a server without tokens),
// stops at --limit, and passes -l as label= queries.
func TestListContainersPages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n         int
		withToken bool
		args      []string
		wantReqs  int
		wantItems int
	}{
		{"continue tokens", 5, true, []string{"--chunk-size", "2"}, 3, 5},
		{"one request", 5, true, []string{"--chunk-size", "0"}, 1, 5},
		{"default chunk", 1200, true, nil, 3, 1200},
		{"limit stops early", 5, true, []string{"--chunk-size", "2", "--limit", "3"}, 2, 3},
		{"offset fallback", 5, false, []string{"--chunk-size", "2"}, 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, pagedContainers(tc.n, tc.withToken))
			args := append([]string{"ls", "containers", "-o", "name", "-l", "team=gen", "-l", "x=y"}, tc.args...)
			code, out, errOut := runCLI(t, f.srv.URL, nil, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			ids := strings.Fields(out)
			var reqs []recorded
			for _, r := range f.requests() {
				if r.path == "/v1/containers" { // not ls's /v1/summary
					reqs = append(reqs, r)
				}
			}
			if len(ids) != tc.wantItems || len(reqs) != tc.wantReqs {
				t.Fatalf("%d ids in %d requests, want %d in %d", len(ids), len(reqs), tc.wantItems, tc.wantReqs)
			}
			for i, id := range ids {
				if id != fmt.Sprintf("c-%016x", i) {
					t.Fatalf("id %d is %s", i, id)
				}
			}
			for _, r := range reqs {
				if got := r.query["label"]; len(got) != 2 || got[0] != "team=gen" || got[1] != "x=y" {
					t.Fatalf("label query %v", r.query)
				}
			}
		})
	}
}

// sshhostsInstances look like the sshhosts driver's: ids whose tails
// differ, long errors.
func sshhostsInstances() []view.Instance {
	var v []view.Instance
	for i := 1; i <= 3; i++ {
		v = append(v, view.Instance{ID: view.InstanceID("host-10-231-0-" + strconv.Itoa(i) + "0"), Type: "gpu-a100-80gb", State: worker.StateRunning,
			IdleBehavior: worker.IdleRun, Containers: []string{"c-1"}, Price: 2.5, AppearedAt: time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC),
			LastError: "probe: ssh: handshake failed: read tcp 10.0.0.1:5555->10.231.0.1:22: connection reset by peer", Address: "10.231.0.1:22"})
	}
	return v
}

func instancesServer(t *testing.T, items func() []view.Instance) *fakeServer {
	return newFake(t, instancesHandler(items))
}

// instancesHandler answers the lists of instances, events and containers.
func instancesHandler(items func() []view.Instance) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch r.URL.Path {
		case "/v1/instances":
			writeJSONTo(w, map[string]any{"items": items()})
		case "/v1/events":
			writeJSONTo(w, map[string]any{"items": []queue.Event{{Seq: 7, Time: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC), Actor: "pool", Target: "host-10-231-0-10",
				Action: "cloud_error", Reason: "create failed: quota exceeded in region us-east-1 for family a100 (limit 8)"}}})
		case "/v1/containers":
			writeJSONTo(w, map[string]any{"items": []view.Container{{ContainerBody: view.ContainerBody{ID: "c-0123456789abcdef", Command: []string{"x"}}, State: queue.Queued, Held: true},
				{ContainerBody: view.ContainerBody{ID: "c-0123456789abcdee", Command: []string{"y"}}, State: queue.Running}}, "items_available": 2})
		}
	}
}

// TestTablesKeepIdsWhole: at 80 columns the sshhosts ids are whole and
// every line fits; piped without $COLUMNS nothing is cut (the events'
// REASON included); -o wide shows more columns.
func TestTablesKeepIdsWhole(t *testing.T) {
	f := instancesServer(t, sshhostsInstances)
	for _, cols := range []string{"80", "60", "40"} {
		code, out, errOut := runCLI(t, f.srv.URL, map[string]string{"COLUMNS": cols}, "", "ls", "instances")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		limit, _ := strconv.Atoi(cols)
		for _, id := range []string{"host-10-231-0-10", "host-10-231-0-20", "host-10-231-0-30"} {
			if !strings.Contains(out, id+" ") {
				t.Errorf("COLUMNS=%s: id %s not whole:\n%s", cols, id, out)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if n := len([]rune(line)); n > limit {
				t.Errorf("COLUMNS=%s: line of %d: %q", cols, n, line)
			}
		}
		if cols == "80" && (!strings.Contains(out, "gpu-a100-80gb") || !strings.Contains(out, "LAST ERROR")) {
			t.Errorf("80 columns drop more than needed:\n%s", out)
		}
	}
	_, piped, _ := runCLI(t, f.srv.URL, nil, "", "ls", "events")
	if !strings.Contains(piped, "(limit 8)") {
		t.Errorf("piped events cut REASON:\n%s", piped)
	}
	_, wide, _ := runCLI(t, f.srv.URL, map[string]string{"COLUMNS": "80"}, "", "ls", "instances", "-o", "wide")
	if !strings.Contains(wide, "ADDRESS") || !strings.Contains(wide, "connection reset by peer") {
		t.Errorf("-o wide:\n%s", wide)
	}
	_, ctrs, _ := runCLI(t, f.srv.URL, nil, "", "ls", "containers")
	if !strings.Contains(ctrs, "Queued*") || !strings.Contains(ctrs, heldLegend) {
		t.Errorf("held container without the legend:\n%s", ctrs)
	}
	_, bare, _ := runCLI(t, f.srv.URL, nil, "", "ls", "containers", "--no-headers")
	if lines := strings.Split(strings.TrimSpace(bare), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "c-0123456789abcdef ") {
		t.Errorf("--no-headers:\n%s", bare)
	}
}

// TestWideNeverWrapsMidTable: -o wide at 80 columns shows every column
// uncut without a line wider than the terminal (each row as a record when
// the table does not fit); where the table fits, and piped, it stays a table.
func TestWideNeverWrapsMidTable(t *testing.T) {
	f := instancesServer(t, sshhostsInstances)
	for _, what := range []string{"instances", "containers"} {
		_, piped, _ := runCLI(t, f.srv.URL, nil, "", "ls", what, "-o", "wide")
		header := strings.SplitN(piped, "\n", 2)[0]
		names := regexp.MustCompile(` {2,}`).Split(strings.TrimSpace(header), -1)
		code, out, errOut := runCLI(t, f.srv.URL, map[string]string{"COLUMNS": "80"}, "", "ls", what, "-o", "wide")
		if code != 0 {
			t.Fatalf("ls %s -o wide: exit %d: %s", what, code, errOut)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if n := len([]rune(line)); n > 80 {
				t.Errorf("ls %s -o wide at 80 columns: line of %d: %q\n%s", what, n, line, out)
			}
		}
		if strings.Contains(out, "…") {
			t.Errorf("ls %s -o wide cut a value:\n%s", what, out)
		}
		for _, name := range names {
			if !strings.Contains(out, name) {
				t.Errorf("ls %s -o wide at 80 columns lacks column %s:\n%s", what, name, out)
			}
		}
		_, roomy, _ := runCLI(t, f.srv.URL, map[string]string{"COLUMNS": "400"}, "", "ls", what, "-o", "wide")
		age := regexp.MustCompile(`\b\d+h\d+m\d+s\b`) // AGE moves between the two runs
		if age.ReplaceAllString(roomy, "AGE") != age.ReplaceAllString(piped, "AGE") {
			t.Errorf("ls %s -o wide at 400 columns is not the piped table:\n%s\npiped:\n%s", what, roomy, piped)
		}
	}
	_, out, _ := runCLI(t, f.srv.URL, map[string]string{"COLUMNS": "80"}, "", "ls", "instances", "-o", "wide")
	if !strings.Contains(out, "connection reset by peer") || !strings.Contains(out, "ADDRESS") {
		t.Errorf("-o wide records lack the last error or ADDRESS:\n%s", out)
	}
}

// TestOutputFormats: -o yaml parses back to what -o json says; -o name is
// one id a line.
func TestOutputFormats(t *testing.T) {
	f := instancesServer(t, sshhostsInstances)
	for _, what := range []string{"instances", "containers", "events"} {
		_, js, _ := runCLI(t, f.srv.URL, nil, "", "ls", what, "-o", "json")
		code, ym, errOut := runCLI(t, f.srv.URL, nil, "", "ls", what, "-o", "yaml")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var fromJSON, fromYAML map[string]any
		if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(ym), &fromYAML); err != nil {
			t.Fatalf("-o yaml does not parse: %v\n%s", err, ym)
		}
		if a, b := fmt.Sprint(fromJSON), fmt.Sprint(fromYAML); a != b || len(fromYAML["items"].([]any)) == 0 {
			t.Fatalf("%s: yaml %s\njson %s", what, b, a)
		}
	}
	_, names, _ := runCLI(t, f.srv.URL, nil, "", "ls", "instances", "-o", "name")
	if names != "host-10-231-0-10\nhost-10-231-0-20\nhost-10-231-0-30\n" {
		t.Fatalf("-o name: %q", names)
	}
}

// TestWatchPrintsChanges: --watch prints the table again when it changes,
// and not when it does not.
// TestWatchPrintsChanges: ls -w prints the listing, then only the rows
// that changed.
func TestWatchPrintsChanges(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	f := instancesServer(t, func() []view.Instance {
		mu.Lock()
		defer mu.Unlock()
		calls++
		v := sshhostsInstances()[:1]
		// Its AGE is different at every fetch: the clock's change, not
		// the instance's, and -w must not print it.
		v[0].AppearedAt = time.Now().Add(-time.Duration(calls) * time.Hour)
		if calls >= 3 {
			v[0].State = worker.StateIdle
		}
		return v
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		deadline := time.Now().Add(wait.Budget(10 * time.Second))
		for time.Now().Before(deadline) {
			mu.Lock()
			n := calls
			mu.Unlock()
			if n >= 6 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	code, out, errOut := runCLICtx(ctx, t, f.srv.URL, nil, "", "ls", "instances", "-w", "--no-headers")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "running") || !strings.Contains(lines[1], "idle") {
		t.Fatalf("want the running row, then only the change to idle (AGE moving is no change):\n%s", out)
	}
}

// TestVerbSaysWhatItActedOn: a container id is acted on as a container
// (through a bulk request) and the output says so.
func TestVerbSaysWhatItActedOn(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path == "/v1/containers/bulk" {
			writeJSONTo(w, api.BulkAnswer{Items: []api.BulkItem{{ID: "c-0123456789abcdef", State: queue.Cancelled}}, OK: 1})
			return
		}
		writeJSONTo(w, view.Instance{ID: "host-1", State: worker.StateShutdown, IdleBehavior: worker.IdleRun})
	})
	code, out, errOut := runCLI(t, f.srv.URL, nil, "", "kill", "c-0123456789abcdef", "host-1")
	if code != 0 || !strings.Contains(out, "c-0123456789abcdef\tkill\tcontainer Cancelled") || !strings.Contains(out, "host-1\tkill\tinstance shutdown") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].path != "/v1/instances/host-1/kill" || reqs[1].path != "/v1/containers/bulk" ||
		!strings.Contains(reqs[1].body, `"ids":["c-0123456789abcdef"]`) || !strings.Contains(reqs[1].body, `"verb":"kill"`) {
		t.Fatalf("requests %v", reqs)
	}
}

// TestSingleDashLongFlags: the long flags the flag package read with one
// dash still work; shorthands, values and the command after -- are kept.
func TestSingleDashLongFlags(t *testing.T) {
	f := newFake(t, submitted)
	code, out, errOut := runCLI(t, f.srv.URL, nil, "", "submit", "-vcpus", "2", "-ram=1GiB", "-label", "a=b", "--", "cmd", "-vcpus")
	if code != 0 || !strings.Contains(out, "c-0123456789abcdef") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	body := f.requests()[0].body
	for _, want := range []string{`"vcpus":2`, `"ram":1073741824`, `"a":"b"`, `"command":["cmd","-vcpus"]`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s: %s", want, body)
		}
	}
	code, _, errOut = runCLI(t, f.srv.URL, nil, "", "submit", "-bogus", "--", "x")
	if code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Fatalf("unknown single-dash flag: exit %d: %s", code, errOut)
	}
}

// testStart is the moment the tests' clock stands at, so that an AGE
// column reads the same in two listings a test compares.
var testStart = time.Now()

func testNow() time.Time { return testStart }
