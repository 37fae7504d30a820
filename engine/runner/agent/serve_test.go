//go:build linux

package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// serveConn is a "runner serve" fed through a pipe: run by Main in this
// process (startServe) or as a process of its own (startServeProcess).
type serveConn struct {
	tb      testing.TB
	in      io.WriteCloser
	replies *bufio.Reader
	done    chan int // serve's exit code
}

func startServe(tb testing.TB, env Env) *serveConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &serveConn{tb: tb, in: inW, replies: bufio.NewReader(outR), done: make(chan int, 1)}
	go func() {
		code := Main([]string{"serve"}, inR, outW, io.Discard, env)
		outW.Close()
		s.done <- code
	}()
	return s
}

// end closes serve's stdin and waits for it to exit.
func (s *serveConn) end() {
	s.in.Close()
	<-s.done
}

// startServeProcess runs "runner serve" as a process of its own, as SSH
// does: its exit closes the supervisors' stdin, not serve.
func startServeProcess(tb testing.TB, env Env) *serveConn {
	tb.Helper()
	cmd := exec.Command(env.Self, append(append([]string(nil), env.SelfArgs...), "serve")...)
	cmd.Env = append(os.Environ(), StateDirEnv+"="+env.StateDir)
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &serveConn{tb: tb, in: in, replies: bufio.NewReader(out), done: make(chan int, 1)}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		s.done <- cmd.ProcessState.ExitCode()
		close(exited)
	}()
	tb.Cleanup(func() {
		in.Close()
		<-exited
	})
	return s
}

// exchange sends reqs as one frame and returns the replies.
func (s *serveConn) exchange(reqs ...string) []runner.Reply {
	s.tb.Helper()
	out, err := s.tryExchange(reqs...)
	if err != nil {
		s.tb.Fatal(err)
	}
	return out
}

// tryExchange is exchange for goroutines other than the test's.
func (s *serveConn) tryExchange(reqs ...string) ([]runner.Reply, error) {
	frame := "\n"
	if len(reqs) > 0 {
		frame = strings.Join(reqs, "\n") + "\n\n"
	}
	if _, err := io.WriteString(s.in, frame); err != nil {
		return nil, err
	}
	var out []runner.Reply
	for {
		line, err := s.replies.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading replies: %v", err)
		}
		if line == "\n" {
			return out, nil
		}
		var r runner.Reply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("reply %q: %v", line, err)
		}
		out = append(out, r)
	}
}

// TestServeFrames drives "runner serve" through a pipe: each frame gets its
// replies and an empty line; a frame cut short by the end of stdin is not
// run.
func TestServeFrames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := startServe(t, h.env)
	exchange := srv.exchange
	start := func(id string, cmd ...string) string {
		b, _ := json.Marshal(runner.Request{Verb: "start", ID: id, Spec: mustJSON(t, runner.Spec{ID: id, Command: cmd})})
		return string(b)
	}

	rs := exchange(start("s1", "sh", "-c", "echo hello"), start("s2", "true"), `{"verb":"bogus"}`, `not json`)
	if len(rs) != 4 || rs[0].Code != 0 || rs[1].Code != 0 || rs[2].Code != 2 || rs[3].Code != 2 {
		t.Fatalf("first frame replies: %+v", rs)
	}
	h.waitState("s1", runner.StateExited)
	h.waitState("s2", runner.StateExited)
	rs = exchange(`{"verb":"logs","id":"s1"}`, `{"verb":"list"}`)
	if len(rs) != 2 || string(rs[0].Stdout) != "hello\n" {
		t.Fatalf("second frame replies: %+v", rs)
	}
	if sts, err := runner.ParseList(rs[1].Stdout); err != nil || len(sts) != 2 {
		t.Fatalf("list in a frame: %v %+v", err, sts)
	}
	if rs := exchange(); len(rs) != 0 {
		t.Fatalf("empty frame: %+v", rs)
	}
	// Half a frame, then the end of stdin: serve exits without running it.
	if _, err := io.WriteString(srv.in, `{"verb":"forget","id":"s1"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	srv.in.Close()
	if code := <-srv.done; code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if _, ok := h.status("s1"); !ok {
		t.Fatal("a frame without its closing empty line was run")
	}
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A serve session whose executable was deleted runs no more frames: it
// exits 127 at the next one, as the shell would for a runner that is not
// there, so that the dispatcher installs it again instead of sending
// starts that could start no supervisor.
func TestServeExitsOnceDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	env := h.env
	env.Self = filepath.Join(t.TempDir(), "dispatch-tui-runner")
	if err := os.WriteFile(env.Self, []byte("stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, env)
	if rs := srv.exchange(`{"verb":"list"}`); len(rs) != 1 || rs[0].Code != 0 {
		t.Fatalf("list before the deletion: %+v", rs)
	}
	if err := os.Remove(env.Self); err != nil {
		t.Fatal(err)
	}
	if rs, err := srv.tryExchange(`{"verb":"list"}`); err == nil {
		t.Fatalf("a frame after the deletion was answered: %+v", rs)
	}
	select {
	case code := <-srv.done:
		if code != 127 {
			t.Fatalf("serve exited %d after its executable was deleted, want 127", code)
		}
	case <-time.After(waitFor):
		t.Fatal("serve did not exit after its executable was deleted")
	}
}
