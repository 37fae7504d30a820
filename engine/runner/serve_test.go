//go:build linux

package runner

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestServeFrames drives "runner serve" through a pipe: each frame gets its
// replies and an empty line; a frame cut short by the end of stdin is not
// run.
func TestServeFrames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := Main([]string{"serve"}, inR, outW, io.Discard, h.env)
		outW.Close()
		done <- code
	}()
	replies := bufio.NewReader(outR)
	exchange := func(reqs ...string) []Reply {
		t.Helper()
		frame := "\n"
		if len(reqs) > 0 {
			frame = strings.Join(reqs, "\n") + "\n\n"
		}
		if _, err := io.WriteString(inW, frame); err != nil {
			t.Fatal(err)
		}
		var out []Reply
		for {
			line, err := replies.ReadString('\n')
			if err != nil {
				t.Fatalf("reading replies: %v", err)
			}
			if line == "\n" {
				return out
			}
			var r Reply
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("reply %q: %v", line, err)
			}
			out = append(out, r)
		}
	}
	start := func(id string, cmd ...string) string {
		b, _ := json.Marshal(Request{Verb: "start", ID: id, Spec: mustJSON(t, Spec{ID: id, Command: cmd})})
		return string(b)
	}

	rs := exchange(start("s1", "sh", "-c", "echo hello"), start("s2", "true"), `{"verb":"bogus"}`, `not json`)
	if len(rs) != 4 || rs[0].Code != 0 || rs[1].Code != 0 || rs[2].Code != 2 || rs[3].Code != 2 {
		t.Fatalf("first frame replies: %+v", rs)
	}
	h.waitState("s1", StateExited)
	h.waitState("s2", StateExited)
	rs = exchange(`{"verb":"logs","id":"s1"}`, `{"verb":"list"}`)
	if len(rs) != 2 || string(rs[0].Stdout) != "hello\n" {
		t.Fatalf("second frame replies: %+v", rs)
	}
	if sts, err := ParseList(rs[1].Stdout); err != nil || len(sts) != 2 {
		t.Fatalf("list in a frame: %v %+v", err, sts)
	}
	if rs := exchange(); len(rs) != 0 {
		t.Fatalf("empty frame: %+v", rs)
	}
	// Half a frame, then the end of stdin: serve exits without running it.
	if _, err := io.WriteString(inW, `{"verb":"forget","id":"s1"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if _, ok := h.status("s1"); !ok {
		t.Fatal("a frame without its closing empty line was run")
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
