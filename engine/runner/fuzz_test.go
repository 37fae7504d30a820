package runner

import (
	"bytes"
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
		{ID: "lost", State: StateExited, ExitCode: -1},
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
			if !ValidID(st.ID) || (st.State != StateRunning && st.State != StateExited) {
				t.Fatalf("accepted %+v", st)
			}
		}
		var buf bytes.Buffer
		if err := FormatList(&buf, sts); err != nil {
			t.Fatalf("FormatList of parsed %+v: %v", sts, err)
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
			if a.ID != b.ID || a.PID != b.PID || a.State != b.State || a.ExitCode != b.ExitCode ||
				!a.StartedAt.Equal(b.StartedAt) || !a.FinishedAt.Equal(b.FinishedAt) {
				t.Fatalf("round trip: %+v became %+v", a, b)
			}
		}
	})
}
