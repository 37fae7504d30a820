// GET logs: a container's stored or live output, and following it.

package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// defaultFollowPoll is how often a followed container's output is read
// again (tests poll faster).
const defaultFollowPoll = 500 * time.Millisecond

// finalLogsGrace is how long a follow waits, after the container ended,
// for its output to be readable (from the store, or from its runner).
var finalLogsGrace = 30 * time.Second

func (s *server) logs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, badRequest("", "malformed query string: "+err.Error()))
		return
	}
	q, herr := parseLogsQuery(v)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if _, ok := s.eng.Container(id); !ok {
		writeError(w, containerNotFound(id))
		return
	}
	if q.Follow {
		s.followLogs(w, r, id, q.Tail)
		return
	}
	out, err := s.eng.Logs(r.Context(), id, q.Tail)
	if err != nil {
		writeError(w, logsError(id, err))
		return
	}
	textHeader(w)
	if out.Dropped > 0 {
		w.Header().Set(TruncatedHeader, strconv.FormatInt(out.Dropped, 10))
	}
	w.WriteHeader(http.StatusOK)
	if out.Dropped > 0 {
		io.WriteString(w, view.TruncationNote(out.Dropped))
	}
	w.Write(out.Data)
}

// TruncatedHeader, on a logs response, is how many bytes were cut from the
// start of the output shown, which was over [containers] max_output; the
// body's first line (view.TruncationNote) says the same to a reader.
const TruncatedHeader = "X-Logs-Truncated"

func textHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
}

func logsError(id string, err error) *httpError {
	var unavailable *engine.LogsUnavailableError
	switch {
	case errors.Is(err, engine.ErrNoLogs), errors.As(err, &unavailable):
		return notFound("container " + id + ": " + err.Error())
	case errors.Is(err, queue.ErrNotFound):
		return containerNotFound(id)
	}
	return &httpError{status: http.StatusBadGateway, msg: "read logs of " + id + ": " + err.Error()}
}

// followLogs streams a container's output: what there is now (its last
// tail lines when tail > 0), then whatever is new every s.followPoll, until
// the container is final and its output was written, or the client goes
// away.
func (s *server) followLogs(w http.ResponseWriter, r *http.Request, id string, tail int) {
	ctx := r.Context()
	textHeader(w)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()

	var tr logTracker
	var finalSince time.Time // wall time the container was first seen final
	tick := time.NewTicker(s.followPoll)
	defer tick.Stop()
	for {
		c, ok := s.eng.Container(id)
		if !ok {
			return
		}
		final := c.State.Final()
		out, err := s.eng.Logs(ctx, id, 0)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			chunk := tr.next(out.Data)
			if tr.first {
				chunk = runner.TailLines(chunk, tail)
				tr.first = false
				if out.Dropped > 0 && len(chunk) == len(out.Data) {
					// What is shown begins at the cut: say so first.
					if _, werr := io.WriteString(w, view.TruncationNote(out.Dropped)); werr != nil {
						return
					}
				}
			}
			if len(chunk) > 0 {
				if _, werr := w.Write(chunk); werr != nil {
					return
				}
				rc.Flush()
			}
			if final {
				// Logs of a final container come from the store: that is
				// all there will be.
				return
			}
		} else if final {
			// Never ran, or its output is known to be lost or not
			// stored: no output will come. Otherwise wait a while for
			// the pool to store it.
			if (c.StartedAt.IsZero() || c.LogsError != "") && !tr.started {
				return
			}
			if finalSince.IsZero() {
				finalSince = time.Now()
			} else if time.Since(finalSince) > finalLogsGrace {
				return
			}
		} else if !errors.Is(err, engine.ErrNoLogs) {
			s.log.Debug("follow logs", "container", id, "err", err.Error())
		}
		if s.followWaiting != nil {
			s.followWaiting()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// logWindow is how much of the output already seen a logTracker keeps to
// find its place again when the output is truncated or its source changes
// (from the runner to the store once the container ends).
const logWindow = 16 << 10

// logTracker finds the new part of a container's output between polls.
// The engine returns the whole output each time (from the runner while the
// container runs, the stored tail once it has ended), so new output is
// what follows the end of the previous read: at the same offset when the
// output only grew, else after the last occurrence of the previously seen
// tail (never repeating output already written).
type logTracker struct {
	started bool   // a read succeeded
	first   bool   // the chunk returned is the first one
	off     int    // length of the previous read
	win     []byte // its last logWindow bytes
}

func (t *logTracker) next(out []byte) []byte {
	var chunk []byte
	switch {
	case !t.started:
		t.started, t.first = true, true
		chunk = out
	case len(out) >= t.off && bytes.Equal(out[t.off-len(t.win):t.off], t.win):
		chunk = out[t.off:]
	default:
		chunk = out[t.align(out):]
	}
	t.off = len(out)
	t.win = append(t.win[:0], out[max(0, len(out)-logWindow):]...)
	return chunk
}

// align returns where the previously seen output ends in out.
func (t *logTracker) align(out []byte) int {
	if len(t.win) == 0 {
		return 0
	}
	if i := bytes.LastIndex(out, t.win); i >= 0 {
		return i + len(t.win)
	}
	// out may start inside the window (the stored tail is shorter than what
	// was read before): find the longest line-aligned prefix of out that
	// ends the window.
	for p := min(len(out), len(t.win)-1); p > 0; p-- {
		if out[p-1] == '\n' && bytes.HasSuffix(t.win, out[:p]) {
			return p
		}
	}
	return 0
}
