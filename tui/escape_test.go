package tui

import (
	"strings"
	"testing"
)

// hostile is user data that would drive a terminal if printed raw: a colour,
// a carriage return, a bell and a C1 CSI.
const hostile = "\x1b[31mred\r\x07\u009b"

// rawSequences must never reach the terminal from user data. (The theme's
// own styling uses other SGR codes.)
var rawSequences = []string{"\x1b[31m", "\r", "\x07", "\u009b", "\x1b]0;", "\x1b[2J", "\x1b[9999m"}

// TestUserDataEscaped: names, commands, reasons, errors, events and logs
// with control characters are shown escaped, as the CLI shows them
// (termsafe), in every table and view.
func TestUserDataEscaped(t *testing.T) {
	m, fb := newTest(t, Options{})
	s := fakeSnapshot(7, 35)
	for i := range s.Containers {
		if c := &s.Containers[i]; c.ID == "c-000002" {
			c.Name = hostile
			c.Command = []string{"echo", "\x1b]0;title\x07"}
			c.Reason = "runner said \x1b[2J"
			c.Env = map[string]string{"A": "\r"}
		}
	}
	s.Instances[4].LastError = "boom \x1b[9999m"
	s.Events[9].Actor = "op\x1b[9999m"
	s.Events[9].Reason = hostile
	fb.logs = "out " + hostile + "\nnext\ttab\n"
	size(m, 220, 50)
	load(t, m, fb, s)

	check := func(view string, want ...string) {
		t.Helper()
		raw := m.View().Content
		for _, seq := range rawSequences {
			if strings.Contains(raw, seq) {
				t.Errorf("%s view prints %q raw", view, seq)
			}
		}
		got := plain(m)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s view lacks %q:\n%s", view, w, got)
			}
		}
	}
	press(m, "2")
	check("containers", `\x1b[31m`, `runner said \x1b[2J`) // the name column is narrow
	m.table().SetCursor("c-000002")
	runCmd(m, press(m, "enter"))
	check("details", `c-000002  \x1b[31mred\r\a\u009b`, `echo \x1b]0;title\a`, `A=\r`, `out \x1b[31mred\r\a\u009b`)
	press(m, "esc")
	runCmd(m, press(m, "l"))
	check("logs", `out \x1b[31mred\r\a\u009b`, "next    tab")
	press(m, "esc", "1")
	check("instances", `boom \x1b[9999m`)
	press(m, "4")
	check("events", `op\x1b[9999m`, `\x1b[31mred\r\a\u009b`)
}
