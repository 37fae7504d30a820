// `e`: editing a container's priority.

package tui

// `e`: edit a container's priority by typing the new value (k9s's edit,
// for the one field a container has that can change).

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/dialog"
)

// editPriority opens the prompt for the new priority of the marked rows
// shown, or of the cursor row.
func (m *Model) editPriority() tea.Cmd {
	if m.snapErr != nil { // the rows are stale: a verb would act on a guess
		return m.setFlash("priority: not connected ("+m.snapErr.Error()+")", true)
	}
	ids, hidden := m.table().MarkedShown()
	if len(ids) == 0 && hidden > 0 {
		return m.setFlash(fmt.Sprintf("priority: the %s hidden by the filter (esc clears it)", plural(hidden, "marked row is", "marked rows are")), true)
	}
	if len(ids) == 0 {
		if id := m.table().Cursor(); id != "" {
			ids = []string{id}
		}
	}
	if len(ids) == 0 {
		return m.notHere("priority", "no row selected")
	}
	m.prioFor = ids
	prompt, cur := "priority of "+plural(len(ids), "container", "containers")+" (0 = never scheduled): ", ""
	if len(ids) == 1 {
		prompt = "priority of " + ids[0] + " (0 = never scheduled): "
		if c := m.row(ids[0]); c != nil {
			cur = strconv.Itoa(int(c.Priority))
		}
	}
	m.openInput(modePrio, prompt, cur)
	return nil
}

// setPriority applies a typed priority: at once on one container, after a
// dialog on several (typing their count) or when it is 0.
func (m *Model) setPriority(typed string) tea.Cmd {
	ids := m.prioFor
	m.prioFor = nil
	n, err := strconv.Atoi(strings.TrimSpace(typed))
	if err != nil || n < 0 {
		return m.setFlash("priority: type a whole number, 0 or more (0 = never scheduled); "+strconv.Quote(typed)+" is not", true)
	}
	label := "set priority " + strconv.Itoa(n)
	pv := &pendingVerb{action: label, view: vContainers}
	for _, id := range ids {
		pv.targets = append(pv.targets, verbTarget{id: id, ctr: view.ContainerPriority, prio: n})
	}
	switch {
	case len(ids) > 1:
		body := []string{fmt.Sprintf("Set the priority of %s to %d.", plural(len(ids), "container", "containers"), n)}
		if n == 0 {
			body = append(body, prioZeroNote)
		}
		body = append(body, strings.Join(ids, " "))
		m.dlg = dialog.New(fmt.Sprintf("Set priority %d on %s?", n, plural(len(ids), "container", "containers")), "Set "+strconv.Itoa(n), strconv.Itoa(len(ids)), body...)
	case n == 0:
		m.dlg = dialog.New("Priority 0 for "+ids[0]+"?", "Set 0", "", prioZeroNote)
	default:
		return m.execute(pv)
	}
	m.dlgFor = pv
	return nil
}

// plural is "1 container", "2 containers".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
