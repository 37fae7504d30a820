package cli

import (
	"bytes"
	"dispatch-tui/engine/termsafe"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// hostile is user data that would drive a terminal if printed raw: a colour,
// a carriage return, a bell and a C1 CSI.
const hostile = "\x1b[31mred\r\x07\u009b"

// TestTablesEscapeUserData: the ls tables show control characters from
// names, commands, reasons, errors and events escaped, as the console does
// (termsafe).
func TestTablesEscapeUserData(t *testing.T) {
	var out bytes.Buffer
	ctrs := []view.Container{
		{ContainerBody: view.ContainerBody{ID: "c-1", Name: hostile, Command: []string{"echo", hostile}}, State: queue.Running},
		{ContainerBody: view.ContainerBody{ID: "c-2", Command: []string{"x"}, Reason: "said \x1b]0;t\x07"}, State: queue.Cancelled},
		{ContainerBody: view.ContainerBody{ID: "c-3", Command: []string{strings.Repeat("あ", 40)}}, State: queue.Queued},
	}
	ct, _ := containerTable(ctrs, nil, len(ctrs), time.Now())
	if err := ct.render(&out, layout{width: 80, headers: true}); err != nil {
		t.Fatal(err)
	}
	insts := []view.Instance{{ID: "i-1", Type: "small", State: worker.StateIdle, LastError: "ssh: \x1b[2J", AppearedAt: time.Now()}}
	if err := instanceTable(insts, time.Now()).render(&out, layout{width: 80, headers: true}); err != nil {
		t.Fatal(err)
	}
	evs := []queue.Event{{Seq: 1, Time: time.Now(), Actor: "op\x1b[9m", Target: "c-1", Action: "kill", Reason: "\r\x07"}}
	if err := eventTable(evs).render(&out, layout{width: 80, headers: true}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, raw := range []string{"\x1b", "\r", "\x07", "\u009b"} {
		if strings.Contains(got, raw) {
			t.Errorf("table prints %q raw:\n%s", raw, got)
		}
	}
	for _, want := range []string{`echo \x1b[31mred\r\a\u009b`, `said \x1b]0;t\a`, `ssh: \x1b[2J`, `op\x1b[9m`, `\r\a`, "あああ"} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack %q:\n%s", want, got)
		}
	}
}

// TestInstanceAgeFromCreatedAt: AGE counts from the creation time kept in
// the instance's tags (a restarted dispatcher sees old instances appear
// now), and from when it was first seen when no tag says.
func TestInstanceAgeFromCreatedAt(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		view    view.Instance
		wantAge string
	}{
		{"tagged", view.Instance{ID: "i-1", CreatedAt: now.Add(-3 * time.Hour), AppearedAt: now}, "3h0m"},
		{"untagged", view.Instance{ID: "i-2", AppearedAt: now.Add(-90 * time.Second)}, "1m3"},
		{"unknown", view.Instance{ID: "i-3"}, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := instanceTable([]view.Instance{tc.view}, time.Now()).render(&out, layout{width: 200, headers: true}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			head, row := lines[0], lines[1]
			at := strings.Index(head, "AGE")
			if at < 0 || len(row) < at+len(tc.wantAge) || !strings.HasPrefix(row[at:], tc.wantAge) {
				t.Fatalf("AGE column of\n%s\nwant it to start with %q", out.String(), tc.wantAge)
			}
		})
	}
}

// TestWrapAtSpaces: record values wrap at spaces only, and a word longer
// than the line is cut where the line ends, losing nothing.
func TestWrapAtSpaces(t *testing.T) {
	got := termsafe.WrapWords("read tcp 10.0.0.1:5555->10.231.0.1:22 reset", 12)
	want := []string{"read tcp", "10.0.0.1:555", "5->10.231.0.", "1:22 reset"}
	if !slices.Equal(got, want) {
		t.Errorf("WrapWords = %q, want %q", got, want)
	}
}
