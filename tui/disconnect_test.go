package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/tui/backend"

	tea "charm.land/bubbletea/v2"
)

// erringBackend is the fake backend whose snapshots fail with err once
// set.
type erringBackend struct {
	*fakeBackend
	mu  sync.Mutex
	err error
}

func (b *erringBackend) Snapshot(ctx context.Context) (*backend.Snapshot, error) {
	b.mu.Lock()
	err := b.err
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return b.fakeBackend.Snapshot(ctx)
}

func (b *erringBackend) fail(err error) { b.mu.Lock(); b.err = err; b.mu.Unlock() }

func newErring(t *testing.T) (*Model, *erringBackend) {
	eb := &erringBackend{fakeBackend: &fakeBackend{}}
	eb.set(fakeSnapshot(3, 5))
	m, err := newModel(Options{Backend: eb, Theme: "dark"}, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	m.tick = stillTick
	size(m, 120, 40)
	m.Update(m.startFetch()())
	return m, eb
}

// A refused token ends the console with the error (Run returns it), as
// the CLI does, instead of leaving a stale console with verbs on.
func TestFatalBackendErrorQuits(t *testing.T) {
	m, eb := newErring(t)
	refused := &backend.FatalError{Err: &api.APIError{Status: 403, Message: "invalid token"}}
	eb.fail(refused)
	m.fetching = false
	_, cmd := m.Update(m.startFetch()())
	if cmd == nil {
		t.Fatal("no command after a fatal error")
	}
	if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Fatalf("a fatal snapshot error does not quit")
	}
	if !errors.Is(m.insp.fatal, refused) || !strings.Contains(m.insp.fatal.Error(), "invalid token (HTTP 403)") {
		t.Errorf("the error to exit with: %v", m.insp.fatal)
	}
}

// An error that may recover keeps the console, says when it retries, and
// turns the verbs off until a snapshot arrives.
func TestRetryShownAndVerbsOff(t *testing.T) {
	m, eb := newErring(t)
	eb.fail(&backend.RetryError{Err: errors.New("dial unix /run/d.sock: connect: connection refused"), Attempt: 3, At: t0.Add(4 * time.Second)})
	m.fetching = false
	m.Update(m.startFetch()())
	got := plain(m)
	for _, want := range []string{"STALE", "disconnected — retrying in 4s (attempt 3); verbs are off: dial unix /run/d.sock: connect: connection refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
	press(m, "1", "h")
	if m.dlg != nil || len(eb.calls) != 0 || !strings.Contains(m.flash, "not connected") {
		t.Errorf("a verb while disconnected: dialog %v, calls %v, flash %q", m.dlg != nil, eb.calls, m.flash)
	}
	eb.fail(nil)
	m.fetching = false
	m.Update(m.startFetch()())
	if strings.Contains(plain(m), "STALE") {
		t.Errorf("still STALE after a snapshot")
	}
}
