package worker

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink the pool's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// A forget that fails the same way pass after pass is one warning, then
// debug lines; a new failure, or the same one after a success, warns again.
func TestForgetFailureWarnsOnce(t *testing.T) {
	var logs lockedBuffer
	h := newHarness(t, hopt{pool: func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}})
	id := h.createIdle("small")
	h.pool.mu.Lock()
	w := h.pool.byID[id]
	h.pool.mu.Unlock()
	missing := errors.New("runner forget: exit 127: runner not found")
	for range 30 { // a pass a second for half a minute
		h.pool.forgotten(w, []string{"c1"}, []error{missing})
	}
	if n, again := logs.count(`level=WARN msg="runner forget failed"`), logs.count(`msg="runner forget failed again"`); n != 1 || again != 29 {
		t.Fatalf("%d warnings and %d debug lines for 30 equal failures, want 1 and 29:\n%s", n, again, logs.b.String())
	}
	h.pool.forgotten(w, []string{"c1"}, []error{errors.New("runner forget: connection reset")})
	h.pool.forgotten(w, []string{"c2"}, []error{missing})
	h.pool.forgotten(w, []string{"c1"}, []error{nil})
	h.pool.forgotten(w, []string{"c1"}, []error{missing})
	if n := logs.count(`level=WARN msg="runner forget failed"`); n != 4 {
		t.Fatalf("%d warnings, want 4 (another error, another container, the same error after a success):\n%s", n, logs.b.String())
	}
}
