//go:build linux

package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"dispatch-tui/engine/runner"
)

// FuzzServe feeds "runner serve" arbitrary frames: it never panics, answers
// every complete frame with one reply line per request line and an empty
// line, runs nothing of a frame cut short, and refuses a line that is not a
// request with code 2. A start's spec goes through the worker's spec checks
// (what it accepts is valid, and survives a JSON round trip), but frames
// with a start are not run: they would run their commands. Frames asking
// for version are not run either (it hashes the test binary: slow, and it
// reads no input).
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		"{\"verb\":\"list\"}\n\n",
		"{\"verb\":\"list\"}\n{\"verb\":\"logs\",\"id\":\"c1\",\"tail\":3}\n\n{\"verb\":\"forget\",\"id\":\"c1\"}\n\n",
		"{\"verb\":\"kill\",\"id\":\"../etc\",\"signal\":\"KILL\"}\n{\"verb\":\"kill\",\"id\":\"c1\",\"signal\":\"HUP\"}\n\n",
		"{\"verb\":\"bogus\"}\n{\n  \r\n",
		"{\"verb\":\"list\"}\n", // cut short: not run
		"\n\n\n",
		"{\"verb\":\"logs\",\"id\":\".\",\"tail\":-5}\n\n",
		"{\"verb\":\"start\",\"id\":\"c1\",\"spec\":{\"id\":\"c1\",\"command\":[\"true\"],\"env\":{\"A\":\"1\"}}}\n\n",
		"{\"verb\":\"start\",\"id\":\"c1\",\"spec\":{\"id\":\"c1\",\"command\":[\"x\"],\"image\":\"-v\"}}\n\n",
	} {
		f.Add([]byte(s))
	}
	state := f.TempDir()
	f.Fuzz(func(t *testing.T, in []byte) {
		// The frames as serve should see them: lines, trimmed; an empty
		// one ends a frame. A last line without "\n" is a line too.
		lines := strings.Split(string(in), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		var frames []int // request lines per complete frame
		n := 0
		for _, l := range lines {
			if len(l) > 2*maxSpecBytes {
				t.Skip("line over the scanner's limit")
			}
			l = strings.TrimSpace(l)
			if l == "" {
				frames = append(frames, n)
				n = 0
				continue
			}
			n++
			var r runner.Request
			if json.Unmarshal([]byte(l), &r) != nil {
				continue
			}
			switch r.Verb {
			case "start":
				if spec, err := decodeSpec(r.Spec); err == nil {
					if runner.ValidateSpec(&spec) != nil || !safeID(spec.ID) {
						t.Fatalf("accepted spec %+v", spec)
					}
					b, _ := json.Marshal(&spec)
					if _, err := decodeSpec(b); err != nil {
						t.Fatalf("round trip of %s: %v", b, err)
					}
				}
				t.Skip("runs commands")
			case "version":
				t.Skip("hashes the test binary")
			}
		}
		var out, errb bytes.Buffer
		code := Main([]string{"serve"}, bytes.NewReader(in), &out, &errb, Env{StateDir: state})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		rest := out.String()
		for i, k := range frames {
			for j := 0; j < k; j++ {
				line, more, ok := strings.Cut(rest, "\n")
				if !ok || line == "" {
					t.Fatalf("frame %d: %d replies, want %d; output %q", i, j, k, out.String())
				}
				var r runner.Reply
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("frame %d reply %d: %q: %v", i, j, line, err)
				}
				rest = more
			}
			line, more, ok := strings.Cut(rest, "\n")
			if !ok || line != "" {
				t.Fatalf("frame %d not ended by an empty line; output %q", i, out.String())
			}
			rest = more
		}
		if rest != "" {
			t.Fatalf("output past the complete frames (%v): %q", frames, rest)
		}
	})
}
