package tui

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
	"dispatch-tui/tui/backend"
)

// The details of an event whose target is gone say so; `l` is offered
// only in a container's details.
func TestEventTargetGoneAndLogsOffered(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(3, 10)
	s.Events = append(s.Events, queue.Event{Seq: 11, Time: t0, Actor: "pool", Kind: "state", Target: "i-gone",
		Action: "state", Reason: "booting -> idle (0 containers)"})
	load(t, m, fb, s)
	press(m, "4")
	m.table().SetCursor("11")
	press(m, "enter", "enter")
	if !strings.Contains(m.flash, "i-gone is gone") || strings.Contains(m.flash, "not an instance or a container") {
		t.Errorf("enter on an event whose instance is gone: flash %q", m.flash)
	}
	if footer := lines(m)[39]; strings.Contains(footer, "l logs") {
		t.Errorf("an event's details offer l logs: %q", footer)
	}
	press(m, "esc", "1", "enter")
	if footer := lines(m)[39]; strings.Contains(footer, "l logs") {
		t.Errorf("an instance's details offer l logs: %q", footer)
	}
	press(m, "esc", "2", "enter")
	if footer := lines(m)[39]; !strings.Contains(footer, "l logs") {
		t.Errorf("a container's details do not offer l logs: %q", footer)
	}
}

// Events read without repeating themselves: a pool event's change is
// its action, as a container's new state is.
func TestEventWording(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(3, 10)
	s.Events = []queue.Event{
		{Seq: 1, Time: t0, Actor: "pool", Kind: "state", Target: "i-0001", Action: "state", Reason: "booting -> idle (0 containers)"},
		{Seq: 2, Time: t0, Actor: "pool", Kind: "create", Target: "i-0002", Action: "create", Reason: "created small instance (psmall)"},
		{Seq: 3, Time: t0, Actor: "scheduler", Kind: "state", Target: "c-000001", Action: "Running", Reason: "on i-0001"},
	}
	load(t, m, fb, s)
	press(m, "4")
	for seq, want := range map[string][]string{
		"1": {"state", "i-0001", "booting -> idle", "0 containers"},
		"2": {"create", "i-0002", "created", "small instance (psmall)"},
		"3": {"state", "c-000001", "Running", "on i-0001"},
	} {
		row, _ := m.table().Row(seq)
		got := strings.Join(row.Cells[3:], "|")
		if got != strings.Join(want, "|") {
			t.Errorf("event %s: KIND|TARGET|ACTION|REASON = %q, want %q", seq, got, strings.Join(want, "|"))
		}
	}
	if h := lineWith(m, "SEQ"); !strings.Contains(h, "TARGET") || !strings.Contains(h, "ACTION") {
		t.Errorf("events header: %q, want the CLI's TARGET and ACTION", h)
	}
	size(m, 60, 16)
	if l := lineWith(m, "i-0001"); !strings.Contains(l, "booting -> idle") {
		t.Errorf("at 60 columns an instance's change is lost: %q", l)
	}
}

// Text is not cut where there is room; an unnamed container does not
// show its id twice; without colour at 60 columns a failed container
// does not read like a success.
func TestTextUncutAndFailuresWithoutColour(t *testing.T) {
	m, fb := newTest(t, Options{NoColor: true})
	size(m, 120, 40)
	s := fakeSnapshot(7, 10)
	s.Containers[3].Name = "demo-longer-name-00037"
	s.Containers[3].InstanceID = "local-5e1f0c185d0c"
	s.Containers[4].Name = ""
	code := 1
	s.Containers[5].ExitCode = &code
	load(t, m, fb, s)
	press(m, "2")
	if l := lineWith(m, "c-000003"); !strings.Contains(l, "demo-longer-name-00037") || !strings.Contains(l, "local-5e1f0c185d0c") {
		t.Errorf("at 120 columns a name or instance is cut: %q", l)
	}
	if l := lineWith(m, "c-000004"); strings.Count(l, "c-000004") != 1 {
		t.Errorf("an unnamed container shows its id twice: %q", l)
	}
	size(m, 60, 16)
	l := lineWith(m, "c-000005")
	if !strings.Contains(l, "✗1") || !strings.Contains(l, "exit 1") {
		t.Errorf("at 60 columns without colour a failed container reads %q", l)
	}
}

// One vocabulary with the CLI: IDLE, sizes with their units; the types
// view's states read apart from its count; "1 container", not "1
// containers"; a priority step says what it did.
func TestOneVocabulary(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	if h := lineWith(m, "  ID "); !strings.Contains(h, "IDLE") || strings.Contains(h, "BEHAV") {
		t.Errorf("instances header %q, want IDLE", h)
	}
	press(m, "2")
	if l := lineWith(m, "c-000001"); !strings.Contains(l, "2GiB") {
		t.Errorf("MEM without its unit: %q", l)
	}
	press(m, "3")
	if l := lineWith(m, "psmall"); strings.Contains(l, "3 1 idle") || !strings.Contains(l, "3 idle 1, running 2") {
		t.Errorf("types row %q", l)
	}
	press(m, "2")
	m.table().SetCursor("c-000003")
	runCmd(m, press(m, "-"))
	if !strings.Contains(m.flash, "4 → 3") || strings.Contains(m.flash, "priority -1") {
		t.Errorf("flash after - %q, want the change", m.flash)
	}
	m.table().SetCursor("c-000001")
	press(m, "space", "space", "/")
	typeText(m, "c-000001")
	press(m, "enter", "h")
	if m.dlg == nil {
		t.Fatal("hold with a marked row hidden opened no dialog")
	}
	body := strings.Join(m.dlg.Body, " ")
	if !strings.Contains(body, "1 more marked container is hidden") {
		t.Errorf("hidden-mark note: %q", body)
	}
	press(m, "esc", "esc")
	m.table().ClearMarks()
	press(m, "ctrl+a", "K")
	if m.dlg == nil {
		t.Fatal("bulk kill opened no dialog")
	}
	if body := strings.Join(m.dlg.Body, " "); !strings.Contains(body, "SIGTERM, then SIGKILL") || !strings.Contains(m.dlg.Title, "35 containers") {
		t.Errorf("bulk kill dialog does not explain as the single one does: %q: %q", m.dlg.Title, body)
	}
}

// A new console says it is loading, not 0/0; the header counts the list
// the table shows, and says so when the summary is newer.
func TestLoadingAndCountsAgree(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	if got := plain(m); strings.Contains(got, "0/0") || !strings.Contains(lines(m)[5], "loading") {
		t.Errorf("before the first snapshot:\n%s", got)
	}
	s := fakeSnapshot(7, 35)
	s.Summary.Containers = map[queue.State]int{queue.Queued: 60, queue.Running: 40} // newer than the list
	s.ListedAt = t0.Add(-20 * time.Second)
	load(t, m, fb, s)
	press(m, "2")
	got := plain(m)
	if !strings.Contains(got, "containers 35 (list of 11:59:40; 100 now)") || !strings.Contains(got, "35/35") {
		t.Errorf("counts disagree:\n%s", got)
	}
}

// Reconnecting: the header shows the back-off even when the flash line
// shows something else, and the footer offers no verbs.
func TestReconnectingHeaderAndFooter(t *testing.T) {
	m, eb := newErring(t)
	eb.fail(&backend.RetryError{Err: errors.New("connection refused"), Attempt: 2, At: t0.Add(8 * time.Second)})
	m.fetching = false
	m.Update(m.startFetch()())
	press(m, "1", "h") // "not connected" takes the flash line
	if l := lines(m)[0]; !strings.Contains(l, "retry in 8s") {
		t.Errorf("header line %q, want the back-off", l)
	}
	for _, verb := range []string{"h hold", "D drain", "r run", "K kill"} {
		if strings.Contains(lines(m)[39], verb) {
			t.Errorf("footer offers %q while disconnected: %q", verb, lines(m)[39])
		}
	}
	_ = worker.StateIdle
}

// A dispatcher that refuses connections is said in words, not as the
// dial error.
func TestDisconnectedInWords(t *testing.T) {
	m, eb := newErring(t)
	_, err := net.Dial("tcp", closedAddr(t))
	if err == nil {
		t.Fatal("dialled a closed port")
	}
	eb.fail(&backend.RetryError{Err: fmt.Errorf("summary: %w", &url.Error{Op: "Get", URL: "http://127.0.0.1/v1/summary", Err: err}), Attempt: 1, At: t0.Add(time.Second)})
	m.fetching = false
	m.Update(m.startFetch()())
	l := lines(m)[4]
	if !strings.Contains(l, "refuses connections (is it running?") || strings.Contains(l, "dial tcp") {
		t.Errorf("disconnected line %q", l)
	}
}

// closedAddr is a TCP address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
