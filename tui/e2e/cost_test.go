package e2e

import (
	"regexp"
	"strings"
	"testing"

	"dispatch-tui/engine/enginetest/wait"
)

// dollarsRE is an amount as the console prints it.
var dollarsRE = regexp.MustCompile(`\$\d+\.\d\d`)

// lineWith is the first line of screen containing s ("" if none).
func lineWith(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestCostViewAt80x24: the console attached to a daemon, at 80×24, shows
// :cost by a label (the projection, the bill and the label's row in
// view), goes back with esc, and shows what a container cost so far in
// its details.
func TestCostViewAt80x24(t *testing.T) {
	t.Parallel()
	needTmux(t)
	b := newBackendSetup(t)
	b.startDaemon(t)
	id := b.cli.submit("--name", "e2e-cost", "--label", "team=genomics", "--", "sleep", "300")
	wait.Until(t, "e2e-cost Running", stateWait, func() bool { return b.cli.ls("containers")[id].State == "Running" })
	tm := startTerm(t, b.sb, 80, 24, nil, binary, "--connect", "http://"+b.server, "--token", token, "--config", b.cfg)
	tm.waitText("remote http://"+b.server, screenWait)

	tm.keys(":")
	tm.typeText("cost label=team")
	tm.keys("Enter")
	sc := tm.waitScreen("the cost view by team with genomics", screenWait, func(sc string) bool {
		return strings.Contains(sc, "Cost by label=team") && strings.Contains(sc, "now $0.10/h") &&
			dollarsRE.MatchString(lineWith(sc, "genomics")) && strings.Contains(sc, "bill $")
	})
	ls := strings.Split(strings.TrimRight(sc, "\n"), "\n")
	if len(ls) != 24 || !strings.Contains(ls[23], "esc back") {
		t.Errorf("the cost view at 80×24 is %d lines, footer %q:\n%s", len(ls), ls[len(ls)-1], sc)
	}
	for _, want := range []string{"TEAM", "CTRS", "OF BILL"} {
		if !strings.Contains(sc, want) {
			t.Errorf("the cost view lacks %q:\n%s", want, sc)
		}
	}
	t.Logf("cost view:\n%s", sc)

	tm.keys("Escape")
	tm.waitScreen("the table again", screenWait, func(sc string) bool {
		return strings.Contains(line(sc, 5), "[1:instances]") && !strings.Contains(sc, "Cost by")
	})
	view(t, tm, 2)
	filterToID(t, tm, id)
	tm.keys("Enter")
	tm.waitScreen("the container's cost in its details", screenWait, func(sc string) bool {
		l := lineWith(sc, "cost:")
		return strings.HasPrefix(l, "cost:") && dollarsRE.MatchString(l) && strings.Contains(l, "so far")
	})
	tm.keys("Escape")
	// Wait: an escape followed at once by q reads as alt+q.
	tm.waitScreen("the table again", screenWait, func(sc string) bool { return !strings.Contains(sc, "cost:") })
	tm.quit()
}
