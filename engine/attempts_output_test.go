package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/store"
)

// A container retried under on-failure keeps every attempt's output: the
// second attempt's store used to replace the first's, without a word
// (docs/design.md §10.1, "No silent loss"). Logs shows each run's output
// after a line naming it.
func TestEveryAttemptsOutputIsKept(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	id := h.submit(5*time.Second, 3, restartOnFailure, maxAttempts(2))
	h.until("both attempts ended, their output stored", 120, func() bool {
		c := h.container(id)
		return c.State.Final() && c.Attempts == 2 && h.cloud.StartCount(id) == 2 && len(h.runnerList(c.InstanceID)) == 0
	})
	out, err := h.eng.Logs(context.Background(), id, 0)
	text := string(out.Data)
	if err != nil || strings.Count(text, "exited 3") != 2 {
		t.Fatalf("logs after 2 runs: %q, %v; want each run's output (%q twice)", text, err, "exited 3")
	}
	if one, two := strings.Index(text, "[dispatch-tui: run 1 of 2, started at "), strings.Index(text, "[dispatch-tui: run 2 of 2, started at "); one != 0 || two < 0 {
		t.Fatalf("logs after 2 runs: %q; want a line naming each run before its output", text)
	}
	if c := h.container(id); c.LogsError != "" || c.LogsTruncated != 0 {
		t.Fatalf("logs_error %q, logs_truncated %d; want neither", c.LogsError, c.LogsTruncated)
	}
}

// outputFailStore is a store whose output writes fail while fail is set
// (a database server restarting), and that counts those that succeed.
type outputFailStore struct {
	store.Store
	fail   atomic.Bool
	stored atomic.Int32
}

func (s *outputFailStore) PutOutputs(ids []string, outputs [][]byte) error {
	if s.fail.Load() {
		return errors.New("injected: the server is restarting")
	}
	if err := s.Store.PutOutputs(ids, outputs); err != nil {
		return err
	}
	s.stored.Add(int32(len(ids)))
	return nil
}

// The last run's output not stored yet (its store failed; its runner keeps
// it): logs shows it after the earlier run's, which is stored, and the
// store, once it works again, keeps both.
func TestLogsShowTheLastRunBeforeItIsStored(t *testing.T) {
	cfg := testConfig(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st, _, err := OpenStore(cfg, filepath.Join(cfg.Dispatcher.StateDir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	fs := &outputFailStore{Store: st}
	h := &harness{t: t, clk: clk, cloud: fake.New(fake.Options{Clock: clk}), cfg: cfg}
	h.eng, err = New(Options{Config: cfg, InstanceSet: h.cloud, NewExecutor: h.cloud.Executor, Clock: clk, Store: fs, Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.eng.Close() })

	id := h.submit(5*time.Second, 3, restartOnFailure, maxAttempts(2))
	h.until("the first run's output stored", 60, func() bool { return fs.stored.Load() == 1 })
	fs.fail.Store(true)
	h.until("the second run ended, its output not stored", 60, func() bool {
		c := h.container(id)
		return c.State.Final() && strings.HasPrefix(c.LogsError, "logs: not stored")
	})
	if out, err := h.eng.Logs(context.Background(), id, 0); err != nil || strings.Count(string(out.Data), "exited 3") != 2 {
		t.Fatalf("logs with the last run on its runner only: %q, %v; want both runs' output", out.Data, err)
	}
	fs.fail.Store(false)
	h.until("the second run's output stored", 60, func() bool { return h.container(id).LogsError == "" && fs.stored.Load() >= 2 })
	if out, err := h.eng.Logs(context.Background(), id, 0); err != nil || strings.Count(string(out.Data), "exited 3") != 2 {
		t.Fatalf("logs once both are stored: %q, %v; want both runs' output", out.Data, err)
	}
}
