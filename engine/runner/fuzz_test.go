package runner

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseArgs: ParseArgs never panics, accepts only valid ids and known
// signals, and what it accepts survives Command.Line and ParseLine.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"version", "list", "start c1", "kill c1", "kill c1\x00--signal\x00KILL",
		"logs c1\x00--tail\x0010", "forget c1", "kill ../x", "logs c1\x00--tail\x00-1",
		"", "bogus", "kill c1\x00--signal", "logs c1\x00--tail\x00+7", "start a b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// NUL separates words; with no NUL, spaces do.
		var args []string
		if strings.Contains(s, "\x00") {
			args = strings.Split(s, "\x00")
		} else {
			args = strings.Fields(s)
		}
		c, err := ParseArgs(args)
		if err != nil {
			return
		}
		switch c.Verb {
		case "version", "list":
			if c.ID != "" {
				t.Fatalf("%q: id %q for %s", args, c.ID, c.Verb)
			}
		case "start", "kill", "logs", "forget":
			if !ValidID(c.ID) {
				t.Fatalf("%q: accepted invalid id %q", args, c.ID)
			}
		default:
			t.Fatalf("%q: accepted verb %q", args, c.Verb)
		}
		if c.Signal != "" && c.Signal != SignalTerm && c.Signal != SignalKill {
			t.Fatalf("%q: accepted signal %q", args, c.Signal)
		}
		if c.Tail < 0 {
			t.Fatalf("%q: negative tail %d", args, c.Tail)
		}
		line := c.Line("/opt/runner")
		path, back, err := ParseLine(line)
		if err != nil || path != "/opt/runner" || back != c {
			t.Fatalf("%q: Line %q parses back as %q %+v, %v; want %+v", args, line, path, back, err, c)
		}
	})
}

// FuzzParseList: ParseList never panics, and what it accepts survives
// FormatList and ParseList again.
func FuzzParseList(f *testing.F) {
	var seed bytes.Buffer
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	FormatList(&seed, []Status{
		{ID: "a", PID: 12, State: StateRunning, StartedAt: t0},
		{ID: "b.c_d-1", PID: 13, State: StateExited, ExitCode: 143, StartedAt: t0, FinishedAt: t0.Add(time.Second)},
		{ID: "crashed", State: StateExited, ExitCode: -1},
		{ID: "lost", PID: 14, State: StateExited, ExitCode: -1, StartedAt: t0, Lost: LostRebooted},
	})
	f.Add(seed.Bytes())
	f.Add([]byte("\n\n{\"id\":\"x\",\"state\":\"running\",\"started_at\":\"2026-01-02T03:04:05+01:00\"}\n  \n"))
	f.Add([]byte(`{"id":"../x","state":"running"}`))
	f.Add([]byte(`{"id":"x","state":"zombie"}`))
	f.Add([]byte(`{"id":"x","state":"exited","pid":1e3}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sts, err := ParseList(data)
		if err != nil {
			return
		}
		for _, st := range sts {
			if !ValidID(st.ID) || (st.State != StateRunning && st.State != StateExited) || (st.Lost != "" && st.State != StateExited) {
				t.Fatalf("accepted %+v", st)
			}
		}
		var buf bytes.Buffer
		if err := FormatList(&buf, sts); err != nil {
			t.Fatalf("FormatList of parsed %+v: %v", sts, err)
		}
		if want, err := encodeList(sts); err != nil || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("FormatList of %+v:\n%q\nencoding/json: %q, %v", sts, buf.Bytes(), want, err)
		}
		back, err := ParseList(buf.Bytes())
		if err != nil {
			t.Fatalf("ParseList of FormatList output %q: %v", buf.String(), err)
		}
		if len(back) != len(sts) {
			t.Fatalf("round trip: %d statuses, want %d", len(back), len(sts))
		}
		for i := range sts {
			a, b := sts[i], back[i]
			if a.ID != b.ID || a.PID != b.PID || a.State != b.State || a.ExitCode != b.ExitCode || a.Lost != b.Lost ||
				!a.StartedAt.Equal(b.StartedAt) || !a.FinishedAt.Equal(b.FinishedAt) {
				t.Fatalf("round trip: %+v became %+v", a, b)
			}
		}
	})
}

// FuzzParseStatusFast: whatever line parseStatusFast accepts,
// json.Unmarshal accepts and decodes to the same Status.
func FuzzParseStatusFast(f *testing.F) {
	var seed bytes.Buffer
	FormatList(&seed, benchStatuses(6))
	for _, line := range bytes.Split(bytes.TrimSpace(seed.Bytes()), []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"id":"a","pid":-0,"state":"zombie","exit_code":-9223372036854775808,"started_at":"2026-01-02T03:04:05.5+01:00","signal":"<9>"}`))
	f.Add([]byte(`{"id":"a","pid":1,"state":"running","exit_code":0,"started_at":"2026-01-02T03:04:05Z","finished_at":"2026-01-02T03:04:05\u005a"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFast(t, line)
	})
}

// replyExec is an Executor that answers every command with the same
// output.
type replyExec struct{ out []byte }

func (e replyExec) Execute(context.Context, string, []byte) ([]byte, []byte, error) {
	return e.out, nil, nil
}
func (replyExec) Close() error { return nil }

// FuzzBatchReplies: the dispatcher's side of "runner batch" never panics on
// what an instance answers, and returns either an error or exactly one
// reply per request.
func FuzzBatchReplies(f *testing.F) {
	f.Add([]byte("{\"code\":0}\n{\"code\":1,\"stderr\":\"no\"}\n"), uint8(2))
	f.Add([]byte("{\"code\":0,\"stdout\":\"aGkK\"}\n"), uint8(1))
	f.Add([]byte("{\"code\":0}"), uint8(2))
	f.Add([]byte("{\"code\":0,\"stdout\":\"not base64\"}\n"), uint8(1))
	f.Add([]byte("[1,2]\n"), uint8(1))
	f.Add([]byte(""), uint8(0))
	f.Add([]byte("{\"code\":0,\"stdout\":\"aGkK\",\"stderr\":\"x\"}\n]"), uint8(1))
	f.Add([]byte("{\"code\":0}{\"code\":1,\"stdout\":\"\"}\r\n null"), uint8(3))
	f.Fuzz(func(t *testing.T, out []byte, n uint8) {
		reqs := make([]Request, int(n)%8)
		for i := range reqs {
			reqs[i] = Request{Verb: "logs", ID: "c" + strconv.Itoa(i)}
		}
		c := &Client{Exec: replyExec{out}, Path: "/r"}
		replies, err := c.Batch(context.Background(), reqs)
		if err == nil && len(replies) != len(reqs) {
			t.Fatalf("%d replies to %d requests, and no error", len(replies), len(reqs))
		}
		checkDecodeReplies(t, out)
		for i := range replies {
			if e := replies[i].Err("logs"); (e == nil) != (replies[i].Code == 0) {
				t.Fatalf("reply %+v: Err %v", replies[i], e)
			}
		}
	})
}

// FuzzParseReplyFast: whatever reply line parseReplyFast accepts,
// json.Unmarshal accepts and decodes to the same Reply.
func FuzzParseReplyFast(f *testing.F) {
	list, _ := encodeList(benchStatuses(3))
	for _, r := range []Reply{{}, {Code: 1, Stderr: "runner kill: no such container"}, {Stdout: list}, {Stdout: []byte{}}, {Stdout: []byte("hi\n")}} {
		f.Add(bytes.TrimSuffix(encodeReplies([]Reply{r}), []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkReplyFast(t, line)
	})
}
