package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/table"
	"dispatch-tui/tui/theme"

	tea "charm.land/bubbletea/v2"
)

// lineWith returns the first line of the plain view containing s.
func lineWith(m *Model, s string) string {
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// withEvents replaces a snapshot's events by those numbered from..to.
func withEvents(s *backend.Snapshot, from, to int) *backend.Snapshot {
	s.Events = nil
	for i := from; i <= to; i++ {
		s.Events = append(s.Events, queue.Event{Seq: uint64(i), Time: t0.Add(time.Duration(i) * time.Second),
			Actor: "scheduler", Kind: "state", Target: fmt.Sprintf("c-%06d", i%10), Action: "Running", Reason: fmt.Sprintf("event %d", i)})
	}
	return s
}

// The events view, newest first, follows new events while its cursor is
// on the newest; scrolled down, it stays where it is.
func TestEventsFollowNewEvents(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 20)
	load(t, m, fb, withEvents(fakeSnapshot(3, 10), 1, 10))
	press(m, "4")
	if got := m.table().Cursor(); got != "10" {
		t.Fatalf("cursor %q, want the newest event 10", got)
	}
	load(t, m, fb, withEvents(fakeSnapshot(3, 10), 1, 40))
	if got := m.table().Cursor(); got != "40" {
		t.Errorf("after 30 new events the cursor is on %q, want the newest (40)", got)
	}
	if l := lineWith(m, "event 40"); !strings.HasPrefix(l, ">") {
		t.Errorf("the newest event is not the cursor row in view: %q\n%s", l, plain(m))
	}
	press(m, "down", "down")
	held := m.table().Cursor()
	load(t, m, fb, withEvents(fakeSnapshot(3, 10), 1, 45))
	if got := m.table().Cursor(); got != held {
		t.Errorf("scrolled down, the cursor moved from %q to %q on new events", held, got)
	}
}

// enter on an event that then ages out of the ring explains what it was
// and that it aged out; one never shown still says where to look.
func TestAgedOutEventExplained(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, withEvents(fakeSnapshot(3, 10), 1, 10))
	press(m, "4")
	m.table().SetCursor("3")
	press(m, "enter")
	if got := plain(m); !strings.Contains(got, "Event #3") || !strings.Contains(got, "event 3") {
		t.Fatalf("details of event 3:\n%s", got)
	}
	load(t, m, fb, withEvents(fakeSnapshot(3, 10), 20, 30))
	got := plain(m)
	for _, want := range []string{"Event #3 has aged out of the event ring", "the oldest kept is #20", "It was:", "actor:         scheduler", "reason:        event 3", "ls events"} {
		if !strings.Contains(got, want) {
			t.Errorf("aged-out details lack %q:\n%s", want, got)
		}
	}
}

// "name:value" filters one column: the events view by actor or target.
func TestEventsFilterByActorAndTarget(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := withEvents(fakeSnapshot(3, 10), 1, 10)
	s.Events[4].Actor = "operator:alice"
	load(t, m, fb, s)
	press(m, "4")
	for _, tc := range []struct {
		filter string
		want   int
	}{
		{"actor:alice", 1},
		{"ACTOR:scheduler", 9},
		{"target:c-000003", 1},
		{"object:c-00000", 10},
		{"!actor:scheduler", 1},
		{"alice", 1},        // plain text still searches every column
		{"nosuch:alice", 0}, // not a column: a plain substring
	} {
		m.table().SetFilter(tc.filter)
		if got := m.table().Shown(); got != tc.want {
			t.Errorf("filter %q shows %d events, want %d", tc.filter, got, tc.want)
		}
	}
}

// Containers that exited non-zero stand out (their own row paint, and
// text in NO_COLOR), and the header counts them.
func TestFailedContainersStandOut(t *testing.T) {
	for _, noColor := range []bool{false, true} {
		m, fb := newTest(t, Options{NoColor: noColor})
		size(m, 120, 40)
		s := fakeSnapshot(3, 14) // c-000005 and c-000012 are Complete, exit 0
		one := 1
		s.Containers[12].ExitCode = &one
		load(t, m, fb, s)
		press(m, "2")
		if !strings.Contains(plain(m), "FAILED 1") {
			t.Errorf("noColor=%v: header lacks the failed count:\n%s", noColor, plain(m))
		}
		if !strings.Contains(lineWith(m, "c-000012"), "exit 1") {
			t.Errorf("failed row lacks its exit code: %q", lineWith(m, "c-000012"))
		}
		rp := m.th.Row(theme.StateFailed)
		raw := m.View().Content
		if rp.Empty() || !strings.Contains(raw, rp.Render(table.Fit("c-000012", 18, false))) {
			t.Errorf("noColor=%v: the failed row is not painted as failed", noColor)
		}
		if strings.Contains(raw, rp.Render(table.Fit("c-000005", 18, false))) {
			t.Errorf("noColor=%v: a container that exited 0 is painted as failed", noColor)
		}
	}
}

// Instance details list its containers as rows: enter opens the selected
// one, enter there opens its instance, esc goes back.
func TestDrillDown(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(3, 10)
	s.Instances[0].Containers = []string{"c-000003", "c-000004"}
	s.Containers[4].InstanceID = "i-0000"
	load(t, m, fb, s)
	press(m, "1")
	m.table().SetCursor("i-0000")
	press(m, "enter")
	if l := lineWith(m, "c-000003"); !strings.HasPrefix(l, "> c-000003") {
		t.Fatalf("first container not selected: %q\n%s", l, plain(m))
	}
	press(m, "down", "enter")
	if m.mode != modeDetails || m.detailView != vContainers || m.detailID != "c-000004" {
		t.Fatalf("enter on the second container: view %v id %q", m.detailView, m.detailID)
	}
	if got := plain(m); !strings.Contains(got, "Container c-000004") || !strings.Contains(got, "(enter opens it)") {
		t.Fatalf("container details:\n%s", got)
	}
	press(m, "enter")
	if m.detailView != vInstances || m.detailID != "i-0000" {
		t.Fatalf("enter in a container's details: view %v id %q, want its instance", m.detailView, m.detailID)
	}
	press(m, "esc")
	if m.mode != modeDetails || m.detailID != "c-000004" {
		t.Fatalf("esc after a drill-down: mode %v id %q, want back on c-000004", m.mode, m.detailID)
	}
	press(m, "esc", "esc")
	if m.mode != modeNormal {
		t.Fatalf("esc back to the table: mode %v", m.mode)
	}
}

// c copies the full id of the cursor row (OSC 52).
func TestCopyID(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 24)
	load(t, m, fb, withEvents(fakeSnapshot(3, 10), 1, 10))
	for _, tc := range []struct{ view, cursor, want string }{
		{"1", "i-0002", "i-0002"},
		{"2", "c-000007", "c-000007"},
		{"4", "7", "c-000007"}, // an event: its target
	} {
		press(m, tc.view)
		m.table().SetCursor(tc.cursor)
		cmd := press(m, "c")
		if cmd == nil {
			t.Fatalf("c gave no command")
		}
		var got []string
		for _, c := range cmd().(tea.BatchMsg) {
			if msg := c(); fmt.Sprintf("%T", msg) == "tea.setClipboardMsg" {
				got = append(got, fmt.Sprint(msg))
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("view %s: copied %q, want %q", tc.view, got, tc.want)
		}
	}
}

// A booting instance whose probes fail is no error: nothing in ERROR, the
// boot probe in its details; a long last error is shown whole.
func TestBootProbeAndLongErrorInDetails(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 40)
	s := fakeSnapshot(5, 0)
	boot := &s.Instances[2] // booting
	boot.ProbeFailing, boot.ProbeError = true, "runner list: ssh: connect: connection refused"
	long := "destroy: " + strings.Repeat("provider said no; ", 12) + "THE-END"
	s.Instances[4].LastError = long
	load(t, m, fb, s)
	press(m, "1")
	if l := lineWith(m, "i-0002"); strings.Contains(l, "refused") {
		t.Errorf("booting row shows its boot probe as an error: %q", l)
	}
	m.table().SetCursor("i-0002")
	press(m, "enter")
	if got := plain(m); !strings.Contains(got, "boot probe:    runner list: ssh: connect: connection refused (retried until") ||
		!strings.Contains(got, "               timeout_booting)") || !strings.Contains(got, "last error:    -") {
		t.Errorf("details lack the boot probe:\n%s", got)
	}
	press(m, "esc")
	m.table().SetCursor("i-0004")
	press(m, "enter")
	got := plain(m)
	if !strings.Contains(got, "THE-END") || strings.Contains(got, "…") {
		t.Errorf("the last error is cut:\n%s", got)
	}
}

// AGE counts from the creation time kept with the instance, not from when
// this dispatcher (re)started.
func TestInstanceAgeFromCreation(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(1, 0)
	s.Instances[0].AppearedAt = t0.Add(-10 * time.Second) // the daemon restarted
	s.Instances[0].CreatedAt = t0.Add(-3 * time.Hour)
	load(t, m, fb, s)
	press(m, "1")
	if l := lineWith(m, "i-0000"); !strings.Contains(l, " 3h ") {
		t.Errorf("AGE of an instance created 3h ago: %q", l)
	}
}

// Container details show its scheduling fields.
func TestContainerSchedulingFields(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(1, 3)
	s.Containers[1].Labels = map[string]string{"team": "ml", "env": "prod"}
	s.Containers[1].Scheduling.Constraints = map[string]string{"gpu": "a100"}
	yes := true
	s.Containers[1].Scheduling.Preemptible = &yes
	s.Containers[1].HealthCheck = &queue.HealthCheck{Command: []string{"curl", "-fs", "localhost/health"},
		Interval: queue.Duration(10 * time.Second), Timeout: queue.Duration(2 * time.Second), Retries: 3}
	s.Containers[1].Health = &runner.Health{State: "unhealthy", Failures: 2, LastResult: "exit status 7", LastOutput: "connection refused"}
	load(t, m, fb, s)
	press(m, "2")
	m.table().SetCursor("c-000001")
	press(m, "enter")
	got := plain(m)
	for _, want := range []string{"labels:        env=prod team=ml", "constraints:   gpu=a100", "preemptible:   yes",
		"health check:  curl -fs localhost/health  every 10s, timeout 2s, 3 retries: unhealthy, 2 failures, last: exit status 7",
		"health output: connection refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("details lack %q:\n%s", want, got)
		}
	}
}

// The unreachable row is painted as a whole, not only its STATE cell.
func TestUnreachableRowPainted(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(3, 0)
	s.Instances[0].UnreachableSince = t0.Add(-34 * time.Second)
	s.Instances[0].State = worker.StateIdle
	load(t, m, fb, s)
	press(m, "1")
	m.table().SetCursor("i-0001")
	rp := m.th.Row(theme.StateUnreachable)
	if rp.Empty() || !strings.Contains(m.View().Content, rp.Render("small    ")) {
		t.Errorf("the TYPE cell of the unreachable row is not painted")
	}
}

func TestHealthCheckText(t *testing.T) {
	for _, tc := range []struct {
		cmd     []string
		i, to   time.Duration
		retries int
		status  string
		want    string
	}{
		{[]string{"curl", "-fs", "localhost:8080/health"}, 10 * time.Second, 2 * time.Second, 3, "healthy",
			"curl -fs localhost:8080/health  every 10s, timeout 2s, 3 retries: healthy"},
		{[]string{"true"}, 0, 0, 0, "", "true: not checked yet"},
	} {
		if got := healthCheckText(tc.cmd, tc.i, tc.to, tc.retries, tc.status); got != tc.want {
			t.Errorf("healthCheckText = %q, want %q", got, tc.want)
		}
	}
}

// Leaving details by another way than esc forgets the drill-downs: esc in
// details opened afresh from the table goes back to the table.
func TestDrillDownForgottenOnFreshDetails(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	s := fakeSnapshot(3, 10)
	s.Instances[0].Containers = []string{"c-000003"}
	load(t, m, fb, s)
	press(m, "1")
	m.table().SetCursor("i-0000")
	press(m, "enter", "enter") // into c-000003
	m.mode = modeNormal        // left some other way (a view key, logs)
	press(m, "2")
	m.table().SetCursor("c-000003")
	press(m, "enter", "esc")
	if m.mode != modeNormal {
		t.Errorf("esc in fresh details went to %v %q, want the table", m.detailView, m.detailID)
	}
}
