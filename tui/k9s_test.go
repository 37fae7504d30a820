package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// ctrl+d deletes as K kills: the same dialog, asking for the id.
func TestCtrlDKillsLikeK(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	for _, view := range []string{"1", "2"} {
		press(m, view)
		press(m, "K")
		if m.dlg == nil {
			t.Fatalf("view %s: K opened no dialog", view)
		}
		want := m.dlg.Title
		press(m, "esc", "ctrl+d")
		if m.dlg == nil || m.dlg.Title != want || m.dlg.Expect == "" {
			t.Errorf("view %s: ctrl+d dialog %+v, want %q asking for the id", view, m.dlg, want)
		}
		press(m, "esc")
	}
	if len(fb.calls) != 0 {
		t.Errorf("cancelled dialogs called the backend: %v", fb.calls)
	}
}

// d describes (details), D drains (its dialog), y shows YAML and c
// copies.
func TestDescribeDrainYamlCopy(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "1")
	m.table().SetCursor("i-0001")
	press(m, "d")
	if m.mode != modeDetails || !strings.Contains(plain(m), "Instance i-0001") {
		t.Fatalf("d: mode %v\n%s", m.mode, plain(m))
	}
	press(m, "esc", "D")
	if m.dlg == nil || m.dlg.Title != "Drain instance i-0001?" {
		t.Fatalf("D: dialog %+v", m.dlg)
	}
	press(m, "esc", "2")
	m.table().SetCursor("c-000003")
	press(m, "y")
	got := plain(m)
	for _, want := range []string{"# container c-000003", "id: c-000003", "priority: 4", "- sleep"} {
		if m.mode != modeYaml || !strings.Contains(got, want) {
			t.Errorf("y: mode %v, lacks %q\n%s", m.mode, want, got)
		}
	}
	press(m, "esc", "enter", "y")
	if m.mode != modeYaml {
		t.Fatalf("y in details: mode %v", m.mode)
	}
	press(m, "esc")
	if m.mode != modeDetails {
		t.Errorf("esc from YAML opened from details: mode %v, want the details", m.mode)
	}
	cmd := press(m, "esc", "c")
	var copied []string
	for _, c := range cmd().(tea.BatchMsg) {
		if msg := c(); fmt.Sprintf("%T", msg) == "tea.setClipboardMsg" {
			copied = append(copied, fmt.Sprint(msg))
		}
	}
	if len(copied) != 1 || copied[0] != "c-000003" {
		t.Errorf("c copied %q", copied)
	}
}

// tab and shift+tab cycle the views; k9s's aliases open them.
func TestTabAndAliases(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	var seen []viewID
	for range 5 {
		seen = append(seen, m.view)
		press(m, "tab")
	}
	if fmt.Sprint(seen) != fmt.Sprint([]viewID{vInstances, vContainers, vTypes, vEvents, vInstances}) {
		t.Errorf("tab: views %v", seen)
	}
	press(m, "shift+tab", "shift+tab") // from containers, back past instances
	if m.view != vEvents {
		t.Errorf("shift+tab from instances: view %v, want events", m.view)
	}
	for cmd, want := range map[string]viewID{"containers": vContainers, "ctr": vContainers, "instances": vInstances, "inst": vInstances, "no": vInstances, "pods": vContainers} {
		press(m, "4", ":")
		typeText(m, cmd)
		press(m, "enter")
		if m.view != want {
			t.Errorf(":%s: view %v, want %v", cmd, m.view, want)
		}
	}
}

// e types a new priority: prefilled with the current one; 0 asks first; a
// bad value says what to type.
func TestEditPriority(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(7, 35))
	press(m, "2")
	m.table().SetCursor("c-000003")
	press(m, "e")
	if m.mode != modePrio || m.in.Value() != "4" || !strings.Contains(plain(m), "priority of c-000003") {
		t.Fatalf("e: mode %v, value %q\n%s", m.mode, m.in.Value(), plain(m))
	}
	press(m, "backspace")
	typeText(m, "9")
	runCmd(m, press(m, "enter"))
	if len(fb.calls) != 1 || fb.calls[0] != (call{"priority", "c-000003", "9"}) {
		t.Fatalf("calls %v, want priority 9 on c-000003", fb.calls)
	}
	press(m, "e", "backspace")
	typeText(m, "-3")
	press(m, "enter")
	if !m.flashErr || !strings.Contains(m.flash, "type a whole number") || len(fb.calls) != 1 {
		t.Errorf("-3: flash %q, calls %v", m.flash, fb.calls)
	}
	press(m, "e", "backspace")
	typeText(m, "0")
	press(m, "enter")
	if m.dlg == nil || !strings.Contains(m.dlg.Title, "Priority 0") || len(fb.calls) != 1 {
		t.Fatalf("0: dialog %+v, calls %v", m.dlg, fb.calls)
	}
	press(m, "tab")
	runCmd(m, press(m, "enter"))
	if len(fb.calls) != 2 || fb.calls[1] != (call{"priority", "c-000003", "0"}) {
		t.Errorf("calls %v, want priority 0 on c-000003", fb.calls)
	}
}
