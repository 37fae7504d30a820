package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deltaQueue is how many containers TestAttachedConsoleFollowsChanges
// queues: by default enough that the first read takes several pages and
// that a refresh reading them all again would show; BENCHMARKS.md records
// it at 100,000 (-deltas.containers).
var deltaQueueFlag = flag.Int("deltas.containers", 20000, "containers TestAttachedConsoleFollowsChanges queues (a multiple of 400)")

// tabCountRE reads the tab bar's "shown/total" rows.
var tabCountRE = regexp.MustCompile(` (\d+)/(\d+)`)

// TestAttachedConsoleFollowsChanges: a console attached to a daemon with
// 20,000 queued containers (-deltas.containers) shows every one, and changes made through the
// CLI — a submit, a kill by selector — reach its rows and header within
// a second (stretched on a loaded machine), agreeing with `ls`.
func TestAttachedConsoleFollowsChanges(t *testing.T) {
	t.Parallel()
	needTmux(t)
	deltaQueue := *deltaQueueFlag
	if deltaQueue <= 0 || deltaQueue%400 != 0 {
		t.Fatalf("-deltas.containers=%d: want a positive multiple of 400 (one in 400 is killed by selector)", deltaQueue)
	}
	b := newBackendSetup(t)
	b.startDaemon(t)
	b.cli.run("pause", "--reason", "e2e: keep the queue waiting")
	var specs strings.Builder
	for i := range deltaQueue {
		grp := "rest"
		if i%400 == 0 {
			grp = "doomed" // 50 of them
		}
		fmt.Fprintf(&specs, "{\"name\":\"q-%d\",\"command\":[\"true\"],\"labels\":{\"grp\":%q}}\n", i, grp)
	}
	file := filepath.Join(t.TempDir(), "specs.jsonl")
	if err := os.WriteFile(file, []byte(specs.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	b.cli.run("submit", "-f", file)

	tm := startTerm(t, b.sb, 140, 40, nil, binary, "--connect", "http://"+b.server, "--token", token, "--config", b.cfg)
	rows := func(n int) func(string) bool {
		return func(sc string) bool {
			m := tabCountRE.FindStringSubmatch(line(sc, 5))
			return m != nil && m[2] == strconv.Itoa(n) && strings.Contains(sc, "containers "+strconv.Itoa(n))
		}
	}
	// The first read is paged: its time grows with the queue.
	firstRead := 30 * time.Second * time.Duration(max(1, deltaQueue/20000))
	start := time.Now()
	tm.waitText("containers "+strconv.Itoa(deltaQueue), firstRead)
	tm.keys("2") // the containers view
	tm.waitScreen(fmt.Sprintf("%d rows", deltaQueue), firstRead, rows(deltaQueue))
	t.Logf("first read of %d containers shown after %s", deltaQueue, time.Since(start))

	// A submit through the CLI: one more row and count.
	b.cli.submit("--name", "late-one", "--", "true")
	at := time.Now()
	tm.waitScreen("the submitted container's row", time.Second, rows(deltaQueue+1))
	t.Logf("a submit shown after %s", time.Since(at))
	if n := len(b.cli.ls("containers")); n != deltaQueue+1 {
		t.Fatalf("ls lists %d containers, the console %d", n, deltaQueue+1)
	}

	// A kill by selector: the rows say Cancelled, as many as ls says.
	b.cli.run("kill", "-l", "grp=doomed")
	at = time.Now()
	cancelled := 0
	for _, c := range b.cli.ls("containers") {
		if c.State == "Cancelled" {
			cancelled++
		}
	}
	if cancelled != deltaQueue/400 {
		t.Fatalf("ls: %d cancelled, want %d", cancelled, deltaQueue/400)
	}
	listed := time.Now()
	tm.waitScreen("the header counting the cancelled", time.Second, func(sc string) bool {
		return strings.Contains(sc, fmt.Sprintf("%d Cancelled", cancelled))
	})
	t.Logf("the header counted %d cancelled %s after ls did (%s after the kill returned)", cancelled, time.Since(listed), time.Since(at))
	filterTo(t, tm, "Cancelled", cancelled)
	t.Logf("a kill of %d shown in the rows %s after the kill returned (with two ls and the filter typed)", cancelled, time.Since(at))
}
