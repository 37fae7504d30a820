package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

func TestInstanceTableShowsUnreachable(t *testing.T) {
	since := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	items := []view.Instance{
		{ID: "i-ok", Type: "small", State: worker.StateIdle, IdleBehavior: worker.IdleRun, Containers: []string{}},
		{ID: "i-cut", Type: "small", State: worker.StateRunning, IdleBehavior: worker.IdleRun, Containers: []string{"c1"},
			ProbeFailing: true, UnreachableSince: since, LastError: "runner list: no answer within 10s"},
		{ID: "i-boot", Type: "small", State: worker.StateBooting, IdleBehavior: worker.IdleRun, Containers: []string{},
			ProbeFailing: true, LastError: "boot probe: connection refused"},
	}
	var b bytes.Buffer
	if err := instanceTable(items, time.Now()).render(&b, layout{headers: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "LAST ERROR") {
		t.Fatalf("table:\n%s", b.String())
	}
	for _, tc := range []struct {
		line       string
		want, dont string
	}{
		{lines[1], "i-ok", "unreachable"},
		{lines[2], "unreachable since " + since.Local().Format("15:04:05") + ": runner list: no answer within 10s", ""},
		{lines[3], "boot probe: connection refused", "unreachable"},
	} {
		if !strings.Contains(tc.line, tc.want) || (tc.dont != "" && strings.Contains(tc.line, tc.dont)) {
			t.Errorf("line %q: want %q, not %q", tc.line, tc.want, tc.dont)
		}
	}

	// -o json carries the fields; a reachable instance has neither.
	b.Reset()
	if err := writeJSON(&b, items); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got[0]["unreachable_since"]; ok {
		t.Errorf("reachable instance has unreachable_since: %v", got[0])
	}
	if got[1]["unreachable_since"] != since.Format(time.RFC3339) || got[1]["last_error"] != items[1].LastError {
		t.Errorf("unreachable instance in JSON: %v", got[1])
	}
}
