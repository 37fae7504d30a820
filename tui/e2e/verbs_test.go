package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/wait"
)

const token = "tmux-e2e-token"

// clockRE matches the header's first line ending in the clock.
var clockRE = regexp.MustCompile(`\d\d:\d\d:\d\d\s*$`)

const (
	screenWait = 15 * time.Second
	stateWait  = 30 * time.Second
)

// backendSetup is a dispatcher the TUI talks to and the CLI can query.
type backendSetup struct {
	sb     *sandbox
	cfg    string // config file path
	server string // host:port of the API
	cli    *cli
	args   []string // more of the daemon's flags (e.g. --profile)
	// config writes a config like cfg's for the API on another
	// host:port and returns its path (startDaemon, when the port was
	// taken before the daemon listened).
	config  func(server string) string
	started bool // a daemon was started on server
}

func newBackendSetup(t *testing.T) *backendSetup {
	t.Helper()
	sb := newSandbox(t)
	state := t.TempDir()
	server := fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
	b := &backendSetup{sb: sb, server: server,
		config: func(server string) string { return writeConfig(t, state, server, token) }}
	b.cfg = b.config(server)
	b.cli = newCLI(t, sb, server, token)
	cfg, err := config.Load(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after the TUI and the daemon are
	// gone, destroy the instances (and the containers they run).
	t.Cleanup(func() { destroyInstances(t, cfg) })
	return b
}

// startDaemon runs `dispatch-tui --daemon` on b's config until cleanup,
// or until the stop it returns is called, and waits until it answers. The
// port freeport found free may be taken before the daemon listens (by
// another test's listener, rarely): the daemon
// then exits saying so, and is started again on another port, b's config,
// server and CLI moved with it — the first time only: a daemon started
// again has consoles waiting for it where it was.
func (b *backendSetup) startDaemon(t *testing.T) (stop func()) {
	t.Helper()
	tries := 5
	if b.started {
		tries = 1
	}
	for try := 1; ; try++ {
		stop, exited, logs := b.launchDaemon(t)
		if b.healthyUnlessExited(t, exited) {
			b.started = true
			return stop
		}
		if try < tries && strings.Contains(logs.String(), "address already in use") {
			t.Logf("daemon: %s was taken before it listened; starting it again on another port", b.server)
			b.server = fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
			b.cfg = b.config(b.server)
			b.cli = newCLI(t, b.sb, b.server, token)
			continue
		}
		t.Fatalf("the daemon exited before it answered on %s:\n%s", b.server, logs.String())
	}
}

// launchDaemon starts the daemon on b's config; exited is closed when it
// has exited, and logs (its standard error) may be read then.
func (b *backendSetup) launchDaemon(t *testing.T) (stop func(), exited <-chan struct{}, logs *bytes.Buffer) {
	t.Helper()
	d := exec.Command(binary, append([]string{"--daemon", "--config", b.cfg}, b.args...)...)
	d.Env, d.Dir = b.sb.env, b.sb.dir
	logs = &bytes.Buffer{}
	d.Stderr = logs
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { d.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			d.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(wait.Budget(10 * time.Second)):
				d.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("daemon log:\n%s", logs.String())
		}
	})
	return stop, done, logs
}

// healthyUnlessExited waits until b's daemon answers /healthz (true), or
// has exited (false).
func (b *backendSetup) healthyUnlessExited(t *testing.T, exited <-chan struct{}) bool {
	t.Helper()
	gone := false
	wait.Until(t, "healthz of "+b.server, 20*time.Second, func() bool {
		select {
		case <-exited:
			gone = true
			return true
		default:
			return healthz(b.server)
		}
	})
	return !gone
}

// TestTUIAgainstDaemon: the TUI attached with --connect to a daemon.
func TestTUIAgainstDaemon(t *testing.T) {
	t.Parallel()
	needTmux(t)
	b := newBackendSetup(t)
	b.startDaemon(t)
	tm := startTerm(t, b.sb, 120, 40, nil, binary, "--connect", "http://"+b.server, "--token", token, "--config", b.cfg)
	tm.waitText("remote http://"+b.server, screenWait)
	exerciseVerbs(t, tm, b.cli)

	t.Run("read-only", func(t *testing.T) {
		ro := startTerm(t, b.sb, 120, 40, nil, binary, "--connect", "http://"+b.server, "--token", token, "--config", b.cfg, "--read-only")
		exerciseReadOnly(t, ro, b.cli)
	})
}

// TestTUIInProcess: the default mode, the engine in the TUI's process,
// serving the API the CLI uses.
func TestTUIInProcess(t *testing.T) {
	t.Parallel()
	needTmux(t)
	b := newBackendSetup(t)
	tm := startTerm(t, b.sb, 120, 40, nil, binary, "--config", b.cfg)
	tm.waitText("local (in-process)", screenWait)
	waitHealthy(t, b.server, 20*time.Second)
	exerciseVerbs(t, tm, b.cli)
}

// filterTo filters the current view to text, leaves filter mode and
// waits for n rows to be shown.
func filterTo(t *testing.T, tm *term, text string, n int) string {
	t.Helper()
	tm.keys("/")
	tm.waitText(filterPromptHint, screenWait)
	tm.typeText(text)
	// The rows are filtered as the text is typed, before enter.
	tm.waitScreen(fmt.Sprintf("live filter %s", text), screenWait, func(sc string) bool {
		return strings.Contains(sc, "/"+text) && strings.Contains(line(sc, 5), fmt.Sprintf(" %d/", n))
	})
	tm.keys("Enter")
	return tm.waitScreen(fmt.Sprintf("%d rows matching %s", n, text), screenWait, func(sc string) bool {
		tab := line(sc, 5)
		return strings.Contains(tab, "filter:"+text) && strings.Contains(tab, fmt.Sprintf(" %d/", n)) &&
			!strings.Contains(sc, filterPromptHint)
	})
}

// filterPromptHint is the footer's hint while a filter is typed.
const filterPromptHint = "enter: keep  esc: clear"

// filterToID filters to the row of id and checks the cursor is on it.
func filterToID(t *testing.T, tm *term, id string) {
	t.Helper()
	sc := filterTo(t, tm, id, 1)
	if r := row(sc, id); !strings.HasPrefix(r, ">") {
		t.Fatalf("filtered to %s but the cursor is not on its row:\n%s", id, sc)
	}
}

// prio returns the PRIO cell of a container row: the field after the
// state (and its held/kill suffix); -1 if not found.
func prio(r string) int {
	f := fields(r)
	for i, w := range f {
		switch w {
		case "Queued", "Locked", "Running", "Complete", "Cancelled":
			j := i + 1
			if j < len(f) && (f[j] == "held" || f[j] == "kill") {
				j++
			}
			if j < len(f) {
				if n, err := strconv.Atoi(f[j]); err == nil {
					return n
				}
			}
			return -1
		}
	}
	return -1
}

// prioIs waits for id's row to show priority n.
func prioIs(t *testing.T, tm *term, id string, n int) {
	t.Helper()
	tm.waitScreen(fmt.Sprintf("%s with priority %d", id, n), screenWait, func(sc string) bool {
		r := row(sc, id)
		return len(r) > 2 && prio(r) == n && r[1] != '~'
	})
}

// clearFilter clears the filter with esc.
func clearFilter(t *testing.T, tm *term) {
	t.Helper()
	tm.keys("Escape")
	tm.waitScreen("no filter", screenWait, func(sc string) bool { return !strings.Contains(line(sc, 5), "filter:") })
}

// view switches to view n (1–4) and waits for its tab.
func view(t *testing.T, tm *term, n int) {
	t.Helper()
	tab := []string{"", "[1:instances]", "[2:containers]", "[3:types]", "[4:events]"}[n]
	tm.keys(fmt.Sprint(n))
	tm.waitScreen(tab, screenWait, func(sc string) bool { return strings.Contains(line(sc, 5), tab) })
}

// rowHas waits for id's row to contain all of words.
func rowHas(t *testing.T, tm *term, id string, words ...string) string {
	t.Helper()
	return tm.waitScreen(fmt.Sprintf("row %s with %q", id, words), screenWait, func(sc string) bool {
		r := row(sc, id)
		if r == "" {
			return false
		}
		f := " " + strings.Join(fields(r), " ") + " "
		for _, w := range words {
			if !strings.Contains(f, " "+w+" ") {
				return false
			}
		}
		return true
	})
}

// waitDialog waits for a dialog titled title, with Cancel focused.
func waitDialog(t *testing.T, tm *term, title string) string {
	t.Helper()
	sc := tm.waitScreen("dialog "+title, screenWait, func(sc string) bool { return dialogOpen(sc) && strings.Contains(sc, title) })
	if !strings.Contains(sc, "> Cancel <") {
		t.Fatalf("dialog %q opened without Cancel focused:\n%s", title, sc)
	}
	return sc
}

func waitNoDialog(t *testing.T, tm *term) string {
	t.Helper()
	return tm.waitScreen("the dialog closed", screenWait, func(sc string) bool { return !dialogOpen(sc) })
}

// exerciseVerbs runs the instance and container verbs, filter, sort,
// a resize to 80×24 and q through the TUI in tm, checking each effect with
// the CLI.
func exerciseVerbs(t *testing.T, tm *term, c *cli) {
	t.Helper()
	// One running container gives one instance to act on.
	run1 := c.submit("--name", "e2e-run1", "--", "sleep", "300")
	var inst string
	wait.Until(t, "e2e-run1 Running", stateWait, func() bool {
		it := c.ls("containers")[run1]
		inst = it.InstanceID
		return it.State == "Running" && inst != ""
	})
	rowHas(t, tm, inst, "running", "run")

	// Instance verbs, on the instance filtered to one row.
	filterToID(t, tm, inst)
	// Hold asks first, with Cancel focused; tab moves to Hold.
	tm.keys("h")
	waitDialog(t, tm, "Hold instance "+inst+"?")
	tm.keys("Tab")
	tm.waitText("> Hold <", screenWait)
	tm.keys("Enter")
	waitNoDialog(t, tm)
	rowHas(t, tm, inst, "hold")
	wait.Until(t, "idle_behavior hold", stateWait, func() bool { return c.ls("instances")[inst].IdleBehavior == "hold" })

	// Drain asks first, with Cancel focused: enter cancels.
	tm.keys("D")
	waitDialog(t, tm, "Drain instance "+inst+"?")
	tm.keys("Enter")
	waitNoDialog(t, tm)
	tm.waitText("cancelled", screenWait)
	if got := c.ls("instances")[inst].IdleBehavior; got != "hold" {
		t.Fatalf("cancelled drain changed idle_behavior to %q", got)
	}
	tm.keys("D")
	waitDialog(t, tm, "Drain instance "+inst+"?")
	tm.keys("Tab")
	tm.waitText("> Drain <", screenWait)
	tm.keys("Enter")
	waitNoDialog(t, tm)
	rowHas(t, tm, inst, "drain")
	wait.Until(t, "idle_behavior drain", stateWait, func() bool { return c.ls("instances")[inst].IdleBehavior == "drain" })

	// Run puts it back to normal.
	tm.keys("r")
	rowHas(t, tm, inst, "run")
	wait.Until(t, "idle_behavior run", stateWait, func() bool { return c.ls("instances")[inst].IdleBehavior == "run" })

	// Kill needs the id typed: OK without it does nothing.
	tm.keys("K")
	waitDialog(t, tm, "Kill instance "+inst+"?")
	tm.waitText("Type "+inst+" to confirm:", screenWait)
	tm.keys("Tab")
	tm.waitText("> Kill <", screenWait)
	tm.keys("Enter")
	tm.waitText("type "+inst+" to confirm", screenWait) // the hint; still open
	if !dialogOpen(tm.last) {
		t.Fatalf("kill dialog closed without the typed id:\n%s", tm.last)
	}
	if _, ok := c.ls("instances")[inst]; !ok {
		t.Fatal("instance gone before the kill was confirmed")
	}
	tm.typeText(inst)
	t.Logf("kill dialog:\n%s", tm.waitScreen("the typed id", screenWait, func(sc string) bool {
		return strings.Contains(sc, "> "+inst) && strings.Contains(sc, "> Kill <")
	}))
	tm.keys("Enter")
	waitNoDialog(t, tm)
	wait.Until(t, "killed instance gone or shut down", stateWait, func() bool {
		it, ok := c.ls("instances")[inst]
		return !ok || it.State == "shutdown"
	})
	tm.waitScreen("killed instance gone from the table or shut down", screenWait, func(sc string) bool {
		r := row(sc, inst)
		return r == "" || strings.Contains(r, "shutdown")
	})
	clearFilter(t, tm)
	// Its container is requeued and runs elsewhere.
	wait.Until(t, "e2e-run1 running on another instance", stateWait, func() bool {
		it := c.ls("containers")[run1]
		return it.State == "Running" && it.InstanceID != inst && it.InstanceID != ""
	})

	// Container verbs, on containers kept Queued by pausing the scheduler.
	c.run("pause", "--reason", "tmux e2e")
	q1 := c.submit("--name", "e2e-q1", "--priority", "0", "--", "sleep", "300")
	q2 := c.submit("--name", "e2e-q2", "--priority", "5", "--", "sleep", "300")
	q3 := c.submit("--name", "e2e-q3", "--priority", "2", "--", "sleep", "300")
	view(t, tm, 2)
	rowHas(t, tm, q1, "Queued")
	prioIs(t, tm, q1, 0)
	prioIs(t, tm, q2, 5)
	if !strings.Contains(line(tm.last, 0), "PAUSED") {
		t.Errorf("header does not show PAUSED: %q", line(tm.last, 0))
	}

	// Sort by priority (shift+p), then again to invert; the header marks it.
	tm.keys("P")
	tm.waitScreen("ascending priority", screenWait, func(sc string) bool {
		return strings.Contains(sc, "PRIO↑") && rowIndex(sc, q1) < rowIndex(sc, q3) && rowIndex(sc, q3) < rowIndex(sc, q2)
	})
	tm.keys("P")
	tm.waitScreen("descending priority", screenWait, func(sc string) bool {
		return strings.Contains(sc, "PRIO↓") && !strings.Contains(sc, "PRIO↑") &&
			rowIndex(sc, q2) < rowIndex(sc, q3) && rowIndex(sc, q3) < rowIndex(sc, q1)
	})
	// Another column moves the mark.
	tm.keys("N")
	tm.waitScreen("sorted by name", screenWait, func(sc string) bool {
		return strings.Contains(sc, "NAME↑") && !strings.Contains(sc, "PRIO↓") &&
			rowIndex(sc, q1) < rowIndex(sc, q2) && rowIndex(sc, q2) < rowIndex(sc, q3)
	})

	filterToID(t, tm, q1)
	// Hold, then release.
	tm.keys("h")
	rowHas(t, tm, q1, "Queued", "held")
	wait.Until(t, "q1 held", stateWait, func() bool { return c.ls("containers")[q1].Held })
	tm.keys("h")
	tm.waitScreen("q1 released", screenWait, func(sc string) bool {
		r := row(sc, q1)
		return strings.Contains(r, "Queued") && !strings.Contains(r, "held") && !strings.Contains(r, "~")
	})
	wait.Until(t, "q1 released", stateWait, func() bool { return !c.ls("containers")[q1].Held })
	// Priority + and -.
	tm.typeText("+")
	prioIs(t, tm, q1, 1)
	wait.Until(t, "q1 priority 1", stateWait, func() bool { return c.ls("containers")[q1].Priority == 1 })
	tm.typeText("+")
	prioIs(t, tm, q1, 2)
	wait.Until(t, "q1 priority 2", stateWait, func() bool { return c.ls("containers")[q1].Priority == 2 })
	tm.typeText("-")
	prioIs(t, tm, q1, 1)
	wait.Until(t, "q1 priority 1 again", stateWait, func() bool { return c.ls("containers")[q1].Priority == 1 })
	// Down to 0 (never scheduled) asks first; enter on Cancel keeps 1.
	tm.typeText("-")
	waitDialog(t, tm, "Priority 0 for "+q1+"?")
	tm.keys("Enter")
	waitNoDialog(t, tm)
	tm.waitText("cancelled", screenWait)
	if got := c.ls("containers")[q1].Priority; got != 1 {
		t.Fatalf("cancelled priority 0 changed the priority to %d", got)
	}
	// Kill, typing the id: once it matches, the focus is on Kill and
	// enter confirms (no tab).
	tm.keys("K")
	waitDialog(t, tm, "Kill container "+q1+"?")
	tm.typeText(q1)
	tm.waitScreen("the typed id and Kill focused", screenWait, func(sc string) bool {
		return strings.Contains(sc, "> "+q1) && strings.Contains(sc, "> Kill <") && !strings.Contains(sc, "> Cancel <")
	})
	tm.keys("Enter")
	waitNoDialog(t, tm)
	wait.Until(t, "q1 Cancelled", stateWait, func() bool { return c.ls("containers")[q1].State == "Cancelled" })
	rowHas(t, tm, q1, "Cancelled")
	clearFilter(t, tm)

	// Bulk: mark two rows (a regexp filter), hold them; the dialog asks
	// for the count.
	filterTo(t, tm, "e2e-q[23]", 2)
	tm.keys("Space", "Space")
	tm.waitText("marked:2", screenWait)
	tm.keys("h")
	waitDialog(t, tm, "Hold 2 containers?")
	tm.waitText("Type 2 to confirm:", screenWait)
	tm.keys("Tab")
	tm.typeText("2")
	tm.keys("Enter")
	waitNoDialog(t, tm)
	wait.Until(t, "q2 and q3 held", stateWait, func() bool {
		cs := c.ls("containers")
		return cs[q2].Held && cs[q3].Held
	})
	rowHas(t, tm, q2, "held")
	rowHas(t, tm, q3, "held")
	clearFilter(t, tm)

	// 80×24: columns dropped, everything still fits, verbs still work.
	tm.resize(80, 24)
	// Laid out for 80 columns (not the 120-column screen clipped): the
	// clock is back at the right edge of the first line, and the table
	// header has dropped TRIES but kept REASON and NAME (the rows are
	// sorted by NAME: the sorted column is never dropped).
	sc := tm.waitScreen("the 80×24 layout", screenWait, func(sc string) bool {
		ls := strings.Split(strings.TrimRight(sc, "\n"), "\n")
		th := line(sc, 6)
		return len(ls) <= 24 && clockRE.MatchString(line(sc, 0)) && strings.Contains(line(sc, 5), "[2:containers]") &&
			strings.HasPrefix(th, "  ID ") && strings.Contains(th, "REASON") &&
			strings.Contains(th, "NAME↑") && !strings.Contains(th, "TRI")
	})
	t.Logf("80×24:\n%s", sc)
	for i, l := range strings.Split(sc, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Fatalf("line %d is %d columns at 80×24: %q", i, n, l)
		}
	}
	if !strings.HasPrefix(line(sc, 23), "q quit") {
		t.Errorf("footer at 80×24 lacks q quit: %q", line(sc, 23))
	}
	// The help scrolls at 80×24, to its last line and back.
	tm.keys("?")
	tm.waitScreen("the help's top", screenWait, func(sc string) bool {
		return strings.Contains(sc, "Keys (rebind") && !strings.Contains(sc, "follows the end")
	})
	tm.keys("PageDown")
	tm.waitScreen("the help scrolled a page", screenWait, func(sc string) bool { return !strings.Contains(sc, "Keys (rebind") })
	tm.keys("End")
	tm.waitScreen("the help's end", screenWait, func(sc string) bool {
		return strings.Contains(sc, "follows the end") && strings.Contains(sc, "Sorting")
	})
	tm.keys("Home")
	tm.waitText("Keys (rebind", screenWait)
	tm.keys("Escape")
	tm.waitScreen("the table again", screenWait, func(sc string) bool { return strings.HasPrefix(line(sc, 6), "  ID ") })
	filterToID(t, tm, q2)
	tm.keys("h") // all marked rows held: this releases
	tm.waitScreen("q2 released at 80×24", screenWait, func(sc string) bool {
		r := row(sc, q2)
		return strings.Contains(r, "Queued") && !strings.Contains(r, "held") && !strings.Contains(r, "~")
	})
	wait.Until(t, "q2 released", stateWait, func() bool { return !c.ls("containers")[q2].Held })
	tm.typeText("+")
	prioIs(t, tm, q2, 6)
	wait.Until(t, "q2 priority 6", stateWait, func() bool { return c.ls("containers")[q2].Priority == 6 })
	// At 60×16 the kill dialog fits above the footer, buttons included.
	tm.resize(60, 16)
	tm.waitScreen("the 60×16 layout", screenWait, func(sc string) bool { return strings.HasPrefix(line(sc, 15), "q quit") })
	tm.keys("K")
	sc = waitDialog(t, tm, "Kill container "+q2+"?")
	if !strings.Contains(sc, "[ Kill ]") || !strings.HasPrefix(line(sc, 15), "q quit") {
		t.Fatalf("kill dialog at 60×16 lost its buttons or the footer:\n%s", sc)
	}
	tm.keys("Escape")
	waitNoDialog(t, tm)
	tm.resize(80, 24)
	tm.waitScreen("the 80×24 layout again", screenWait, func(sc string) bool {
		return strings.HasPrefix(line(sc, 23), "q quit") && strings.Contains(line(sc, 5), "filter:"+q2)
	})
	clearFilter(t, tm)
	view(t, tm, 1)
	// Too small, then back.
	tm.resize(40, 10)
	sc = tm.waitText("terminal too small", screenWait)
	if got := strings.Join(strings.Fields(sc), " "); !strings.Contains(got, "terminal too small: 40×10; need at least 60×16") {
		t.Errorf("too-small message cut at 40×10:\n%s", sc)
	}
	tm.resize(80, 24)
	tm.waitScreen("the table again", screenWait, func(sc string) bool {
		return !strings.Contains(sc, "terminal too small") && strings.Contains(line(sc, 5), "[1:instances]")
	})

	c.run("resume")
	tm.quit()
}

// exerciseReadOnly: with --read-only the header shows RO and h and K open
// no dialog and change nothing.
func exerciseReadOnly(t *testing.T, tm *term, c *cli) {
	t.Helper()
	sc := tm.waitScreen("RO in the header and rows", screenWait, func(sc string) bool {
		return strings.Contains(line(sc, 0), " RO ") && strings.Contains(sc, "> local-")
	})
	if strings.Contains(line(sc, 39), "h hold") || strings.Contains(sc, "K kill") {
		t.Errorf("read-only footer offers verbs: %q", line(sc, 39))
	}
	t.Logf("read-only:\n%s", sc)
	before, beforeC := c.ls("instances"), c.ls("containers")
	// Each verb key must show the "read-only" flash: the console answers
	// a refused verb with that flash and nothing else, so seeing it for
	// this key (after m's mouse flash replaced the previous one) proves
	// the key sent no verb, with nothing left in flight to wait for.
	refused := func(k string) {
		t.Helper()
		tm.keys(k)
		sc := tm.waitScreen(k+" refused", screenWait, func(sc string) bool {
			return strings.Contains(sc, "read-only") && !strings.Contains(sc, "mouse o")
		})
		if dialogOpen(sc) {
			t.Fatalf("read-only: %s opened a dialog:\n%s", k, sc)
		}
		tm.keys("m")
		tm.waitScreen("the mouse flash", screenWait, func(sc string) bool {
			return strings.Contains(sc, "mouse o") && !strings.Contains(sc, "read-only")
		})
	}
	for _, k := range []string{"h", "K", "D"} {
		refused(k)
	}
	view(t, tm, 2)
	for _, k := range []string{"h", "K", "+"} {
		refused(k)
	}
	after := c.ls("instances")
	for id, it := range before {
		if a, ok := after[id]; ok && a.IdleBehavior != it.IdleBehavior {
			t.Errorf("read-only: instance %s idle_behavior %s -> %s", id, it.IdleBehavior, a.IdleBehavior)
		}
	}
	for id, it := range c.ls("containers") {
		if b := beforeC[id]; b.Held != it.Held || b.Priority != it.Priority || (it.State == "Cancelled" && b.State != "Cancelled") {
			t.Errorf("read-only: container %s changed: %+v -> %+v", id, b, it)
		}
	}
	tm.quit()
}

// TestReconnectShown: a console attached to a daemon that stops shows
// the back-off in its header and offers no verbs, then recovers when the
// daemon is back.
func TestReconnectShown(t *testing.T) {
	t.Parallel()
	needTmux(t)
	b := newBackendSetup(t)
	stop := b.startDaemon(t)
	tm := startTerm(t, b.sb, 120, 40, nil, binary, "--connect", "http://"+b.server, "--token", token, "--config", b.cfg)
	tm.waitScreen("connected, verbs offered", screenWait, func(sc string) bool {
		return strings.Contains(line(sc, 0), "remote http://") && strings.Contains(line(sc, 39), "h hold")
	})
	stop()
	sc := tm.waitScreen("the back-off in the header, no verbs in the footer", stateWait, func(sc string) bool {
		return strings.Contains(line(sc, 0), "STALE, retry in ") && strings.Contains(line(sc, 4), "retrying in ") &&
			!strings.Contains(line(sc, 39), "h hold") &&
			!strings.Contains(line(sc, 39), "K kill")
	})
	t.Logf("disconnected:\n%s", sc)
	b.startDaemon(t)
	tm.waitScreen("reconnected", stateWait, func(sc string) bool {
		return !strings.Contains(line(sc, 0), "STALE") && strings.Contains(line(sc, 39), "h hold")
	})
	tm.quit()
}
