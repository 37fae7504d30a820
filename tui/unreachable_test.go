package tui

import (
	"strings"
	"testing"
	"time"

	"dispatch-tui/tui/table"
	"dispatch-tui/tui/theme"
)

// An unreachable instance reads as such in its row (STATE and ERROR, as
// text, painted when colour is on), in the header and in its details.
func TestUnreachableInstanceShown(t *testing.T) {
	for _, noColor := range []bool{false, true} {
		t.Run(map[bool]string{false: "colour", true: "NO_COLOR"}[noColor], func(t *testing.T) {
			m, fb := newTest(t, Options{NoColor: noColor})
			size(m, 120, 40)
			s := fakeSnapshot(7, 10)
			cut := &s.Instances[0] // running
			cut.UnreachableSince = t0.Add(-34 * time.Second)
			cut.LastError = "runner list: no answer within 10s"
			cut.ProbeFailing = true
			load(t, m, fb, s)
			press(m, "1")
			m.table().SetCursor("i-0001") // the cursor row has the cursor's paint
			got := plain(m)

			var row string
			for _, l := range strings.Split(got, "\n") {
				if strings.Contains(l, "i-0000") {
					row = l
				}
			}
			for _, want := range []string{" unreachable 34s ", "runner list: no answer within 10s"} {
				if !strings.Contains(row, want) {
					t.Errorf("row lacks %q: %q", want, row)
				}
			}
			if !strings.Contains(got, "UNREACHABLE 1") {
				t.Errorf("header does not count the unreachable instance:\n%s", got)
			}
			if paint := m.th.State(theme.StateUnreachable); paint.Empty() || !strings.Contains(m.View().Content, paint.Render(table.Fit("unreachable 34s", 15, false))) {
				t.Errorf("STATE cell of the unreachable row is not painted")
			}
			if noColor {
				if raw := m.View().Content; strings.Contains(raw, "38;") || strings.Contains(raw, "48;") {
					t.Errorf("NO_COLOR render contains colour sequences")
				}
			}

			m.table().SetCursor("i-0000")
			press(m, "enter")
			got = plain(m)
			if !strings.Contains(got, "reachable:     NO, unreachable for 34s (since 11:59:26)") || !strings.Contains(got, "probe error:   runner list: no answer within 10s") {
				t.Errorf("details lack the unreachable line:\n%s", got)
			}
		})
	}
}
