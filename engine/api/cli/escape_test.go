package cli

// No text a user typed or a server sent reaches the terminal as control
// characters: every error path and every verb's answer is escaped.

import (
	"net/http"
	"strings"
	"testing"

	"dispatch-tui/engine/view"
)

// esc is an escape sequence that would turn a terminal red.
const esc = "\x1b[31m"

// echoRefusal refuses every request with a message quoting what was sent:
// the path (with its ids) and the body, as servers' messages do.
func echoRefusal(w http.ResponseWriter, r *http.Request, body []byte) {
	w.WriteHeader(http.StatusNotFound)
	writeJSONTo(w, map[string]any{"error": "refused " + r.URL.Path + " " + string(body) + " " + esc + "from the server",
		"types": []string{"t" + esc}})
}

// TestErrorsAndAnswersAreEscaped runs every client command into a refusal
// that quotes the request, with an escape sequence in what the user typed
// and in what the server says, and into answers holding one: stderr and
// the verbs' stdout carry no raw ESC.
func TestErrorsAndAnswersAreEscaped(t *testing.T) {
	id := "i" + esc + "Q"
	ctr := "c-0123456789abcdef"
	cases := [][]string{
		{"hold", id}, {"drain", id}, {"run", id}, {"kill", id},
		{"hold", ctr}, {"kill", ctr}, {"release", ctr},
		{"hold", "--reason", "r" + esc, id, ctr},
		{"kill", "c-" + esc}, {"release", id},
		{"priority", ctr, "3"}, {"priority", ctr, "x" + esc}, {"priority", "c-" + esc, "3"},
		{"logs", ctr}, {"logs", id},
		{"pause", "--reason", "r" + esc}, {"resume", "--reason", "r" + esc},
		{"submit", "--name", "n" + esc, "--", "echo", esc},
		{"submit", "--label", esc + "=1", "--", "x"},
		{"submit", "-f", "specs" + esc + ".jsonl"},
		{"ls", "instances"}, {"ls", "containers", "--q", esc}, {"ls", "types"}, {"ls", "events"}, {"ls", "nodes"},
		{"ls", esc}, {"frob" + esc}, {"hold", "--bogus" + esc, id},
	}
	f := newFake(t, echoRefusal)
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, f.srv.URL, nil, "", args...)
			if code == 0 {
				t.Fatalf("exit 0 from a refusal; stdout %q, stderr %q", out, errOut)
			}
			if strings.Contains(errOut, "\x1b") || strings.Contains(out, "\x1b") {
				t.Fatalf("raw ESC on the terminal: stdout %q, stderr %q", out, errOut)
			}
			if !strings.Contains(errOut, `\x1b`) {
				t.Fatalf("stderr %q does not show the escape as \\x1b", errOut)
			}
		})
	}

	// An unreachable server whose address holds the sequence.
	code, out, errOut := runCLI(t, "http://127.0.0.1:1/"+esc, nil, "", "hold", id)
	if code == 0 || strings.Contains(errOut+out, "\x1b") {
		t.Fatalf("unreachable server: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Answers: a verb's and priority's lines quote the server's state and id.
	answer := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/instances/"):
			writeJSONTo(w, view.Instance{ID: "i" + esc, State: "hold" + esc, IdleBehavior: "x" + esc})
		default:
			writeJSONTo(w, view.Container{ContainerBody: view.ContainerBody{ID: ctr + esc}, State: "Queued" + esc})
		}
	})
	for _, args := range [][]string{{"hold", id}, {"hold", ctr}, {"priority", ctr, "3"}, {"submit", "--", "x"}} {
		code, out, errOut := runCLI(t, answer.srv.URL, nil, "", args...)
		if code != 0 || strings.Contains(out+errOut, "\x1b") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and no raw ESC", args, code, out, errOut)
		}
	}
}
