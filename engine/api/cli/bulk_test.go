package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// realServer is the API of a real engine (fake driver, fake clock,
// never stepped: containers stay Queued) with n containers named by name.
func realServer(t *testing.T, names ...string) (*engine.Engine, string, []string) {
	t.Helper()
	env := enginetest.New(t, enginetest.Config(t), fake.Options{}, engine.Options{})
	srv := httptest.NewServer(api.NewServer(api.ServerOptions{Engine: env.Engine, Token: "t"}))
	t.Cleanup(srv.Close)
	specs := make([]view.Spec, len(names))
	for i, n := range names {
		specs[i] = view.Spec{Name: n, Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1}}
	}
	cs, err := env.Engine.SubmitBatch(specs, "test")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return env.Engine, srv.URL, ids
}

// runTerminal is runCLI with stderr taken for a terminal.
func runTerminal(t *testing.T, server, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin), Server: server, Token: "t",
		Getenv: func(string) string { return "" }, StderrTerminal: func() bool { return true }}
	root := &cobra.Command{Use: "dispatch-tui"}
	Configure(root)
	BindGlobalFlags(root.PersistentFlags(), e)
	AddCommands(root, e)
	code := Execute(context.Background(), root, args, &errb)
	return code, out.String(), errb.String()
}

// TestKillBySelector: kill with a selector kills what ls would list with
// the same filters, and nothing else, in bulk requests, with progress on
// a terminal.
func TestKillBySelector(t *testing.T) {
	eng, url, ids := realServer(t, "nightly-1", "other", "nightly-2", "nightly-3")
	code, out, errOut := runTerminal(t, url, "", "kill", "--state", "Queued", "--q", "nightly", "--reason", "bad input")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if n := strings.Count(out, "\tkill\tcontainer Cancelled\n"); n != 3 {
		t.Errorf("%d lines of killed containers, want 3:\n%s", n, out)
	}
	if !strings.Contains(errOut, "kill: 3 of 3 containers done, 0 failed") {
		t.Errorf("no progress on the terminal's stderr: %q", errOut)
	}
	for i, id := range ids {
		c, _ := eng.Container(id)
		want := queue.Cancelled
		if i == 1 {
			want = queue.Queued
		}
		if c.State != want {
			t.Errorf("%s (%s) is %s, want %s", id, c.Name, c.State, want)
		}
	}
}

// TestHoldIDsFromStdin: "-" reads ids from stdin; one that cannot be held
// is named on stderr and makes the exit that of its kind (4, conflict),
// the others are held.
func TestHoldIDsFromStdin(t *testing.T) {
	eng, url, ids := realServer(t, "a", "b", "c")
	if _, err := eng.KillContainer(ids[1], "test", ""); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, url, nil, strings.Join(ids, "\n")+"\n", "hold", "-")
	if code != 4 {
		t.Fatalf("exit %d, want 4; stderr %q", code, errOut)
	}
	if !strings.HasPrefix(errOut, "container "+ids[1]+" is Cancelled: a finished container cannot be held\n") ||
		!strings.Contains(errOut, "1 of 3 failed: "+ids[1]) {
		t.Errorf("stderr %q does not name the one that failed and why", errOut)
	}
	for _, i := range []int{0, 2} {
		if c, _ := eng.Container(ids[i]); !c.Held || !strings.Contains(out, ids[i]+"\thold\tcontainer Queued (held)") {
			t.Errorf("%s held=%v; stdout %q", ids[i], c.Held, out)
		}
	}
}

// TestBulkVerbUsage: ids with a selector, a verb without either, a
// selector on an instance verb: usage errors, nothing sent.
func TestBulkVerbUsage(t *testing.T) {
	for _, args := range [][]string{
		{"kill"},
		{"kill", "c-0123456789abcdef", "--state", "Queued"},
		{"drain", "--state", "Queued"},
		{"hold", "-l", "team"},
	} {
		code, _, errOut := runCLI(t, "http://127.0.0.1:1", nil, "", args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
	}
}

// TestInstanceErrorNamedOnce: the server's message already names the
// instance; the CLI does not name it a second time.
func TestInstanceErrorNamedOnce(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.WriteHeader(http.StatusNotFound)
		writeJSONTo(w, map[string]string{"error": "instance nosuch: instance not found"})
	})
	code, _, errOut := runCLI(t, f.srv.URL, nil, "", "hold", "nosuch")
	if code != 3 || !strings.HasPrefix(errOut, "instance nosuch: instance not found\n") || strings.Count(errOut, "nosuch:") != 1 {
		t.Errorf("exit %d, stderr %q: want the instance named once", code, errOut)
	}
}

// TestNotAnAPIServer: a web server's HTML error page is not printed; the
// CLI says the server is not a dispatcher's API.
func TestNotAnAPIServer(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<html><body><h1>404 Not Found</h1><p>nginx</p></body></html>")
	})
	code, _, errOut := runCLI(t, f.srv.URL, nil, "", "ls", "instances")
	if code != 1 || strings.Contains(errOut, "<html") || !strings.Contains(errOut, "answered 404 Not Found, not as a dispatcher's API does") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestLogsFollowSaysItWaits: logs -f of a container that has not started
// says it waits, and for what, instead of waiting in silence.
func TestLogsFollowSaysItWaits(t *testing.T) {
	_, url, ids := realServer(t, "q")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _, errOut := runCLICtx(ctx, t, url, nil, "", "logs", "-f", ids[0])
	if !strings.HasPrefix(errOut, "waiting for "+ids[0]+" to start (Queued") {
		t.Errorf("stderr %q: want it to say it waits for the container to start", errOut)
	}
}

// TestLogsBySelector: logs -l prints a header (and the output, or why
// there is none) for each container with the label, and no other.
func TestLogsBySelector(t *testing.T) {
	eng, url, _ := realServer(t, "unlabelled")
	var team []string
	for _, n := range []string{"a", "b"} {
		c, err := eng.Submit(view.Spec{Name: n, Command: []string{"true"}, Labels: map[string]string{"team": "x"}}, "test")
		if err != nil {
			t.Fatal(err)
		}
		team = append(team, c.ID)
	}
	code, out, errOut := runCLI(t, url, nil, "", "logs", "-l", "team=x")
	want := "==> " + team[0] + " (a) <==\n==> " + team[1] + " (b) <==\n"
	if code != 1 || out != want || strings.Count(errOut, "no output yet") != 2 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, %q, and why each has no output", code, out, errOut, want)
	}
	if code, _, _ := runCLI(t, url, nil, "", "logs", "-l", "team=x", "-f"); code != 2 {
		t.Errorf("logs -l -f: exit %d, want 2", code)
	}
}
