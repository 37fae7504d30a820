package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// shellBackend is a fakeBackend that can open shells.
type shellBackend struct {
	*fakeBackend
	shells []string
}

func (s *shellBackend) Shell(_ context.Context, id, term string, cols, rows int, in io.Reader, out io.Writer) error {
	s.shells = append(s.shells, id)
	b, _ := io.ReadAll(in)
	_, err := out.Write(append([]byte("ran: "), b...))
	return err
}

// s opens a shell on the cursor's instance, as a command handing the
// terminal over; refused in read-only mode, over --connect (no shell
// there) and on containers.
func TestShellKey(t *testing.T) {
	sb := &shellBackend{fakeBackend: &fakeBackend{}}
	m := newShellModel(t, sb, false)
	size(m, 120, 40)
	load(t, m, sb.fakeBackend, fakeSnapshot(7, 35))
	press(m, "1")
	m.table().SetCursor("i-0001")
	cmd := press(m, "s")
	if cmd == nil {
		t.Fatal("s gave no command")
	}
	if got := typeName(cmd()); got != "tea.execMsg" {
		t.Fatalf("s: message %s, want the terminal handed over (tea.execMsg)", got)
	}
	// What the command runs: the backend's shell on i-0001, with the
	// console's input and output.
	x := m.shellCommand("i-0001")
	var out bytes.Buffer
	x.SetStdin(strings.NewReader("echo hi\n"))
	x.SetStdout(&out)
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	if len(sb.shells) != 1 || sb.shells[0] != "i-0001" || !strings.Contains(out.String(), "shell on i-0001") || !strings.Contains(out.String(), "ran: echo hi") {
		t.Errorf("shells %v, output %q", sb.shells, out.String())
	}
	m.Update(shellDoneMsg{id: "i-0001"})
	if !strings.Contains(m.flash, "shell on i-0001 closed") {
		t.Errorf("after the shell: flash %q", m.flash)
	}

	ro := newShellModel(t, sb, true)
	size(ro, 120, 40)
	load(t, ro, sb.fakeBackend, fakeSnapshot(7, 35))
	runCmd(ro, press(ro, "1", "s"))
	if ro.flash != "read-only" {
		t.Errorf("read-only: s flashed %q", ro.flash)
	}
	remote, fb := newTest(t, Options{}) // a backend without shells, as --connect's
	size(remote, 120, 40)
	load(t, remote, fb, fakeSnapshot(7, 35))
	runCmd(remote, press(remote, "1", "s"))
	if !strings.Contains(remote.flash, "not over --connect") {
		t.Errorf("over --connect: s flashed %q", remote.flash)
	}
	runCmd(m, press(m, "2", "s"))
	if !strings.Contains(m.flash, "not available here") {
		t.Errorf("s on containers: flash %q", m.flash)
	}
	if len(sb.shells) != 1 {
		t.Errorf("refused shells reached the backend: %v", sb.shells)
	}
}

func typeName(v any) string { return strings.TrimPrefix(fmt.Sprintf("%T", v), "*") }

// newShellModel is newTest's model on a backend with shells (newTest
// takes only a fakeBackend).
func newShellModel(t *testing.T, sb *shellBackend, readOnly bool) *Model {
	t.Helper()
	m, err := newModel(Options{Backend: sb, Theme: "dark", ReadOnly: readOnly}, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	m.tick = stillTick
	return m
}
