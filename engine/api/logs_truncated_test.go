package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
)

// truncatedNote is how the first line of a cut output begins.
const truncatedNote = "[dispatch-tui: output truncated: its first "

// An output under [containers] max_output (4 MiB by default) is kept and
// shown whole, however many lines it has. (Output used to be cut to its
// last 1,000 lines, silently.)
func TestLogsUnderMaxOutputWhole(t *testing.T) {
	e := newEnv(t)
	const smallLines = 3000
	small := e.submit("small", fake.CmdOutput(0, 0, smallLines*1024), 1)
	waitStored(t, e, small)
	resp, body := e.do("GET", "/v1/containers/"+small+"/logs", nil, nil)
	if n := bytes.Count(body, []byte("\n")); n < smallLines || bytes.HasPrefix(body, []byte(truncatedNote)) || resp.Header.Get("X-Logs-Truncated") != "" {
		t.Fatalf("output under the limit: %d lines (want at least %d), header %q, begins %q",
			n, smallLines, resp.Header.Get("X-Logs-Truncated"), body[:min(len(body), 80)])
	}
	if f := containerField(t, e, small, "logs_truncated"); f != nil {
		t.Fatalf("output under the limit: logs_truncated %v", f)
	}
}

// An output over [containers] max_output keeps its end, and the
// container's logs_truncated, the X-Logs-Truncated header and the first
// line of what logs shows (the API's, the CLI's, a follow's) say how much
// was dropped.
func TestLogsOverMaxOutputSaySo(t *testing.T) {
	e := newEnv(t)
	const bigSize = 5 << 20
	big := e.submit("big", fake.CmdOutput(0, 0, bigSize), 1)
	waitStored(t, e, big)

	resp, body := e.do("GET", "/v1/containers/"+big+"/logs", nil, nil)
	note, rest, _ := bytes.Cut(body, []byte("\n"))
	dropped, err := strconv.ParseInt(resp.Header.Get("X-Logs-Truncated"), 10, 64)
	if err != nil || dropped <= 0 || dropped%1024 != 0 {
		t.Fatalf("X-Logs-Truncated %q: want the bytes dropped, whole KiB", resp.Header.Get("X-Logs-Truncated"))
	}
	if !bytes.HasPrefix(note, []byte(truncatedNote+strconv.FormatInt(dropped, 10)+" bytes")) {
		t.Fatalf("first line %q: want it to say that %d bytes were dropped", note, dropped)
	}
	if len(rest) > 4<<20 || int64(len(rest))+dropped < bigSize || !bytes.HasSuffix(rest, []byte("exited 0\n")) {
		t.Fatalf("output over the limit: %d bytes kept after %d dropped; want at most 4 MiB, its end, %d in all", len(rest), dropped, bigSize)
	}
	if f, ok := containerField(t, e, big, "logs_truncated").(float64); !ok || int64(f) != dropped {
		t.Fatalf("logs_truncated %v, want %d", containerField(t, e, big, "logs_truncated"), dropped)
	}

	// The last lines only: they do not reach the cut, nothing to say.
	if _, body := e.do("GET", "/v1/containers/"+big+"/logs?tail=2", nil, nil); bytes.Contains(body, []byte(truncatedNote)) || bytes.Count(body, []byte("\n")) != 2 {
		t.Fatalf("tail 2: %q", body)
	}
	// The client the CLI and a remote console use, plain and followed.
	for _, follow := range []bool{false, true} {
		var buf bytes.Buffer
		if err := e.client.Logs(t.Context(), big, 0, follow, &buf); err != nil || !strings.HasPrefix(buf.String(), string(note)+"\n") || !bytes.Equal(buf.Bytes()[len(note)+1:], rest) {
			t.Fatalf("client logs (follow %v): %v, begins %q", follow, err, buf.String()[:min(buf.Len(), 80)])
		}
	}
}

// waitStored steps until id is Complete and its output readable.
func waitStored(t *testing.T, e *apiEnv, id string) {
	t.Helper()
	e.until(id+" Complete with its output stored", 300, func() bool {
		if e.state(id) != queue.Complete {
			return false
		}
		resp, _ := e.do("GET", "/v1/containers/"+id+"/logs?tail=1", nil, nil)
		return resp.StatusCode == http.StatusOK
	})
}

// containerField is a field of GET /v1/containers/{id}, nil when absent.
func containerField(t *testing.T, e *apiEnv, id, field string) any {
	t.Helper()
	_, body := e.do("GET", "/v1/containers/"+id, nil, nil)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("container %s: %v in %s", id, err, body)
	}
	return m[field]
}
