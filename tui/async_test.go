package tui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// asyncModel is a console on the containers view whose tables sort and
// filter in the background from 10 rows (the console does it from
// asyncRows), the cursor on c-000012.
func asyncModel(t *testing.T) *Model {
	t.Helper()
	m, fb := newTest(t, Options{})
	for _, tb := range m.tables {
		tb.SetAsync(10)
	}
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	m.table().SetCursor("c-000012")
	return m
}

// bodyIDs are the ids of the rows on screen, in order.
func bodyIDs(m *Model) []string {
	var ids []string
	for _, l := range lines(m)[headerLines+1 : 39] {
		if f := strings.Fields(strings.TrimLeft(l, ">*+~ ")); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// pressCmd sends one key and returns the command Update returned.
func pressCmd(m *Model, k string) tea.Cmd {
	_, cmd := m.Update(key(k))
	return cmd
}

// A sort of a large table: the header marks the new sort at once, the
// tab bar says "sorting…" with the spinner over the previous rows, and
// the sorted rows replace them when the result arrives, the cursor on its
// row; the indicator is gone then.
func TestSortInBackground(t *testing.T) {
	m := asyncModel(t)
	before := bodyIDs(m)
	cmd := pressCmd(m, "P")
	if tab := lines(m)[headerLines-1]; !strings.Contains(tab, "sorting…") {
		t.Fatalf("no indicator while sorting: %q", tab)
	}
	if !strings.Contains(lines(m)[headerLines], "PRIO↑") {
		t.Errorf("header does not mark the sort asked for: %q", lines(m)[headerLines])
	}
	if got := bodyIDs(m); !slices.Equal(got, before) {
		t.Errorf("rows changed before the result: %v", got)
	}
	spun := lines(m)[headerLines-1]
	m.Update(spinMsg{seq: m.spinSeq})
	if lines(m)[headerLines-1] == spun {
		t.Error("spinner does not turn while sorting")
	}
	runCmd(m, cmd)
	if tab := lines(m)[headerLines-1]; strings.Contains(tab, "sorting") {
		t.Errorf("indicator still shown after the result: %q", tab)
	}
	if got := bodyIDs(m); got[0] != "c-000000" || got[1] != "c-000005" {
		t.Errorf("rows not sorted by priority: %v", got)
	}
	if m.table().Cursor() != "c-000012" || !strings.HasPrefix(cursorLine(m), "> c-000012") {
		t.Errorf("cursor on %q (line %q), want c-000012", m.table().Cursor(), cursorLine(m))
	}
	if m.Update(spinMsg{seq: m.spinSeq}); m.spinArmed {
		t.Error("spinner still armed with nothing in flight")
	}
}

func cursorLine(m *Model) string {
	for _, l := range lines(m)[headerLines+1:] {
		if strings.HasPrefix(l, ">") {
			return l
		}
	}
	return ""
}

// Typing a filter: every key shows the typed text at once; results of
// keys that a later key superseded are dropped, whether they arrive
// before or after the latest one's, which is the one applied.
func TestFilterInBackgroundLatestWins(t *testing.T) {
	for _, order := range []string{"in order", "newest first"} {
		t.Run(order, func(t *testing.T) {
			m := asyncModel(t)
			before := bodyIDs(m)
			press(m, "/")
			var cmds []tea.Cmd
			for _, k := range strings.Split("c-00001", "") {
				cmds = append(cmds, pressCmd(m, k))
				if got := lines(m)[39]; !strings.Contains(got, "/"+"c-00001"[:len(cmds)]) {
					t.Fatalf("typed text not shown at once: %q", got)
				}
			}
			if tab := lines(m)[headerLines-1]; !strings.Contains(tab, "filtering…") {
				t.Fatalf("no indicator while filtering: %q", tab)
			}
			if got := bodyIDs(m); !slices.Equal(got, before) {
				t.Errorf("rows changed before the result: %v", got)
			}
			if order == "newest first" {
				slices.Reverse(cmds)
			}
			for k, c := range cmds {
				runCmd(m, c)
				if k < len(cmds)-1 && order == "in order" {
					if got := bodyIDs(m); !slices.Equal(got, before) {
						t.Fatalf("result of key %d of %d applied: %v", k+1, len(cmds), got)
					}
				}
			}
			got := bodyIDs(m)
			if len(got) != 10 || got[0] != "c-000010" || got[9] != "c-000019" {
				t.Errorf("shown %v, want c-000010…c-000019", got)
			}
			if tab := lines(m)[headerLines-1]; strings.Contains(tab, "filtering") || !strings.Contains(tab, "10/35") {
				t.Errorf("tab bar %q", tab)
			}
			if m.table().Cursor() != "c-000012" {
				t.Errorf("cursor on %q, want c-000012", m.table().Cursor())
			}
			// Clearing the filter costs nothing: done at once, and
			// it supersedes a filter being computed.
			press(m, "enter", "/")
			stale := pressCmd(m, "3")
			press(m, "esc")
			if tab := lines(m)[headerLines-1]; strings.Contains(tab, "filtering") || !strings.Contains(tab, "35/35") {
				t.Errorf("tab bar after esc: %q", tab)
			}
			runCmd(m, stale)
			if tab := lines(m)[headerLines-1]; !strings.Contains(tab, "35/35") {
				t.Errorf("a superseded filter was applied: %q", tab)
			}
		})
	}
}

// Two sort keys faster than their results: the second (descending) wins
// whichever result arrives first.
func TestSortLatestKeyWins(t *testing.T) {
	for _, newestFirst := range []bool{false, true} {
		m := asyncModel(t)
		c1, c2 := pressCmd(m, "P"), pressCmd(m, "P")
		if newestFirst {
			c1, c2 = c2, c1
		}
		runCmd(m, c1)
		if !newestFirst && !strings.Contains(lines(m)[headerLines-1], "sorting…") {
			t.Errorf("the first key's result ended the sort of the second")
		}
		runCmd(m, c2)
		got := bodyIDs(m)
		if !strings.Contains(lines(m)[headerLines], "PRIO↓") || got[0] != "c-000004" || got[1] != "c-000009" {
			t.Errorf("newest first %v: header %q, rows %v; want descending", newestFirst, lines(m)[headerLines], got)
		}
	}
}

// A refresh while a sort is in flight supersedes it: the refreshed rows
// are sorted at once and the stale result is dropped.
func TestRefreshSupersedesSort(t *testing.T) {
	m := asyncModel(t)
	fb := m.be.(*fakeBackend)
	cmd := pressCmd(m, "P")
	load(t, m, fb, fakeSnapshot(7, 36))
	if tab := lines(m)[headerLines-1]; strings.Contains(tab, "sorting") || !strings.Contains(tab, "/36") {
		t.Fatalf("tab bar after the refresh: %q", tab)
	}
	want := bodyIDs(m)
	if want[0] != "c-000000" || want[1] != "c-000005" {
		t.Errorf("refreshed rows not sorted: %v", want)
	}
	runCmd(m, cmd)
	if got := bodyIDs(m); !slices.Equal(got, want) {
		t.Errorf("stale result changed the rows: %v", got)
	}
}
