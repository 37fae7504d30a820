package e2e

import (
	"strings"
	"testing"

	"dispatch-tui/engine/enginetest/wait"
)

// TestLogViewerColumns: in the real console, a search that lands far
// right and wrapping off show each line from column 0 with a cut marker;
// → and ← scroll; the details opened next start at column 0.
func TestLogViewerColumns(t *testing.T) {
	t.Parallel()
	needTmux(t)
	b := newBackendSetup(t)
	tm := startTerm(t, b.sb, 80, 24, nil, binary, "--config", b.cfg)
	tm.waitText("local (in-process)", screenWait)
	// 100 lines of 150 characters; ERROR=7 at the end of line 7 only.
	script := `awk 'BEGIN{s=sprintf("%140s","");gsub(/ /,"x",s);for(i=0;i<100;i++){t=(i==7)?"ERROR=7":"tail";printf "line %03d %s %s\n",i,s,t}}'; sleep 300`
	id := b.cli.submit("--name", "e2e-long", "--", "sh", "-c", script)
	wait.Until(t, "e2e-long Running", stateWait, func() bool { return b.cli.ls("containers")[id].State == "Running" })
	view(t, tm, 2)
	filterToID(t, tm, id)
	tm.keys("l")
	tm.waitText("line 099", stateWait)
	tm.keys("/")
	tm.typeText("ERROR=7")
	tm.keys("Enter")
	tm.waitText("ERROR=7", screenWait)
	tm.keys("w")
	sc := tm.waitScreen("line 7 from column 0, cut at the edge", screenWait, func(sc string) bool {
		for _, l := range strings.Split(sc, "\n") {
			if strings.HasPrefix(l, "line 007 xxx") && strings.HasSuffix(strings.TrimRight(l, " "), "…") {
				return true
			}
		}
		return false
	})
	t.Logf("unwrapped:\n%s", sc)
	tm.keys("Right")
	tm.waitScreen("scrolled right", screenWait, func(sc string) bool {
		return !strings.Contains(sc, "line 007") && strings.Contains(sc, "…xxx")
	})
	tm.keys("Home")
	tm.waitText("line 000 xxx", screenWait)
	tm.keys("Right")
	tm.waitScreen("scrolled right again", screenWait, func(sc string) bool { return !strings.Contains(sc, "line 000") })
	// One key at a time: escapes sent together read as alt+key.
	tm.keys("Escape")
	tm.waitScreen("the table", screenWait, func(sc string) bool { return strings.HasPrefix(line(sc, 6), "  ID ") })
	view(t, tm, 1)
	tm.keys("Enter")
	sc = tm.waitScreen("instance details at column 0", screenWait, func(sc string) bool {
		return strings.HasPrefix(line(sc, 6), "Instance local-")
	})
	t.Logf("details:\n%s", sc)
	tm.quit()
}
