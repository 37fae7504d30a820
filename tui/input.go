// Keys and typed input: each mode's key dispatch, and the prompts.

package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/dialog"
	"dispatch-tui/tui/keys"
	"dispatch-tui/tui/table"
)

// Keys and typed input: the key dispatch of every mode, and the filter,
// log search and `:` command prompts, which are one bubbles textinput.

// notHere is the one message for a key that does nothing where it was
// pressed, with why when it helps.
func (m *Model) notHere(what string, why ...string) tea.Cmd {
	msg := what + ": not available here"
	if len(why) > 0 {
		msg += " (" + strings.Join(why, " ") + ")"
	}
	return m.setFlash(msg, true)
}

const historyLen = 50

// newInput returns the prompt's text input: a steady cursor (no blink
// timer), ↑↓ left to the command history, tab completing.
func newInput(dark, noColor bool) textinput.Model {
	in := textinput.New()
	in.SetStyles(inputStyles(dark, noColor))
	in.KeyMap.NextSuggestion.SetKeys("ctrl+n")
	in.KeyMap.PrevSuggestion.SetKeys("ctrl+p")
	return in
}

// inputStyles are bubbles' text input styles for the theme: a steady
// cursor, and no colour at all under NO_COLOR (the cursor is reversed).
func inputStyles(dark, noColor bool) textinput.Styles {
	st := textinput.DefaultStyles(dark)
	if noColor {
		st = textinput.Styles{}
	}
	st.Cursor.Blink = false
	return st
}

// commandNames are what `:` completes: the views (with a state argument
// for the two stateful ones) and quit.
func commandNames() []string {
	out := []string{"instances", "containers", "types", "events", "cost", "cost type", "cost state", "cost label=", "help", "quit"}
	for _, s := range view.States {
		out = append(out, "containers "+string(s))
	}
	for _, s := range instanceOrder {
		out = append(out, "instances "+string(s))
	}
	return out
}

// openInput starts typing a command, a filter or a log search.
func (m *Model) openInput(md mode, prompt, value string) {
	m.inputFrom = m.mode
	m.mode = md
	m.in.Reset()
	m.in.Prompt = prompt
	m.in.ShowSuggestions = md == modeCommand
	if md == modeCommand {
		m.in.SetSuggestions(commandNames())
	} else {
		m.in.SetSuggestions(nil)
	}
	m.in.SetValue(value)
	m.in.CursorEnd()
	m.in.Focus()
	m.histPos = len(m.history)
}

func (m *Model) closeInput() {
	m.mode = m.inputFrom
	m.in.Blur()
}

func (m *Model) onInputKey(msg tea.KeyPressMsg) tea.Cmd {
	md := m.mode
	switch msg.String() {
	case "esc":
		m.closeInput()
		if md == modeFilter {
			m.table().SetFilter("")
		}
		return nil
	case "enter":
		s := m.in.Value()
		m.closeInput()
		switch md {
		case modeCommand:
			if strings.TrimSpace(s) != "" && (len(m.history) == 0 || m.history[len(m.history)-1] != s) {
				m.history = append(m.history, s)
				if len(m.history) > historyLen {
					m.history = slices.Delete(m.history, 0, len(m.history)-historyLen)
				}
			}
			return m.command(s)
		case modeFilter:
			if err := table.FilterError(s); err != nil {
				return m.setFlash("filter: not a valid regular expression ("+err.Error()+"); matching it as text", true)
			}
		case modeSearch:
			return m.searchLogs(s)
		case modePrio:
			return m.setPriority(s)
		}
		return nil
	case "up", "down":
		if md == modeCommand && len(m.history) > 0 {
			if msg.String() == "up" {
				m.histPos = max(m.histPos-1, 0)
			} else {
				m.histPos = min(m.histPos+1, len(m.history))
			}
			v := ""
			if m.histPos < len(m.history) {
				v = m.history[m.histPos]
			}
			m.in.SetValue(v)
			m.in.CursorEnd()
		}
		return nil
	}
	var cmd tea.Cmd
	m.in, cmd = m.in.Update(msg)
	if md == modeFilter {
		m.table().SetFilter(m.in.Value())
	}
	return cmd
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if m.dlg != nil {
		switch m.dlg.Update(msg) {
		case dialog.Cancelled:
			m.dlg, m.dlgFor = nil, nil
			return m.setFlash("cancelled", false)
		case dialog.Confirmed:
			pv := m.dlgFor
			m.dlg, m.dlgFor = nil, nil
			return m.execute(pv)
		}
		return nil
	}
	switch m.mode {
	case modeCommand, modeFilter, modeSearch, modePrio:
		return m.onInputKey(msg)
	}
	act := m.km.Lookup(m.scope(), msg)
	if m.mode == modeDetails {
		if cmd, ok := m.detailKey(act); ok { // drill-down (inspect.go)
			return cmd
		}
	}
	switch m.mode {
	case modeHelp, modeDetails, modeLogs, modeYaml, modeCost: // a pager's keys (pager.go)
		if cmd, done := m.onScreenKey(act, msg.String()); done {
			return cmd
		}
	}
	if act == "" {
		k := msg.String()
		if len(k) == 1 && k[0] >= 'A' && k[0] <= 'Z' && m.mode == modeNormal {
			if m.table().SortBy(k) {
				return nil
			}
			return m.notHere(k, "no column of this view sorts by", k)
		}
		return m.notHere(k)
	}
	if m.km.IsVerb(act) && m.opts.ReadOnly {
		if m.opts.ReadOnlyReason != "" {
			return m.setFlash("read-only: "+m.opts.ReadOnlyReason, true)
		}
		return m.setFlash("read-only", true)
	}
	switch act {
	case keys.Quit:
		return tea.Quit
	case keys.Help:
		m.openScreen(modeHelp)
	case keys.Command:
		m.openInput(modeCommand, ":", "")
	case keys.Filter:
		m.openInput(modeFilter, "/", m.table().Filter())
	case keys.Back:
		if m.table().Filter() != "" {
			m.table().SetFilter("")
		}
	case keys.ViewInst:
		m.switchView(vInstances)
	case keys.ViewCtr:
		m.switchView(vContainers)
	case keys.ViewTypes:
		m.switchView(vTypes)
	case keys.ViewEv:
		m.switchView(vEvents)
	case keys.Up:
		m.table().Move(-1)
	case keys.Down:
		m.table().Move(1)
	case keys.PageUp:
		m.table().PageUp()
	case keys.PageDown:
		m.table().PageDown()
	case keys.Top:
		m.table().Home()
	case keys.Bottom:
		m.table().End()
	case keys.Mark:
		m.table().ToggleMark()
		m.table().Move(1)
	case keys.MarkAll:
		m.table().MarkAll()
	case keys.NextView:
		m.switchView((m.view + 1) % nViews)
	case keys.PrevView:
		m.switchView((m.view + nViews - 1) % nViews)
	case keys.Details:
		id := m.table().Cursor()
		if id == "" {
			return m.notHere("details", "no row selected")
		}
		m.detailID, m.detailView, m.detailLogs = id, m.view, ""
		m.insp.back = m.insp.back[:0] // opened from the table: esc goes back there
		m.openScreen(modeDetails)
		m.cost.gen++ // a fetch in flight is for another screen
		m.cost.forced = true
		return tea.Batch(m.fetchLogs(), m.fetchCost())
	case keys.Logs:
		id := m.table().Cursor()
		if m.view != vContainers || id == "" {
			return m.notHere("logs", "select a container in view 2")
		}
		return m.openLogs(id, modeNormal)
	case keys.Yaml:
		id := m.table().Cursor()
		if id == "" {
			return m.notHere("yaml", "no row selected")
		}
		return m.openYaml(m.view, id, modeNormal)
	case keys.Copy:
		return m.copyID()
	case keys.Mouse:
		m.mouse = !m.mouse
		if m.mouse {
			return m.setFlash("mouse on (m to turn off; shift+drag selects text)", false)
		}
		return m.setFlash("mouse off", false)
	case keys.Pause:
		paused := m.snap != nil && m.snap.Summary.Paused
		name := "Pause"
		body := "Stop starting containers and creating instances; running work continues."
		if paused {
			name, body = "Resume", "Start scheduling containers again."
		}
		m.dlg = dialog.New(name+" the scheduler?", name, "", body)
		m.dlgFor = &pendingVerb{action: strings.ToLower(name), paused: !paused}
	case keys.PrioEdit:
		return m.editPriority()
	case keys.Shell:
		return m.openShell()
	default:
		return m.verb(act)
	}
	return nil
}

func (m *Model) command(s string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimSpace(s), " ")
	arg = strings.TrimSpace(arg)
	var v viewID
	switch name {
	case "":
		return nil
	case "instances", "instance", "inst", "i", "in", "no", "node", "nodes": // k9s's nodes
		v = vInstances
	case "containers", "container", "ctr", "c", "co", "po", "pod", "pods": // k9s's pods
		v = vContainers
	case "types", "type", "t":
		v = vTypes
	case "events", "event", "ev", "e":
		v = vEvents
	case "q", "quit", "q!":
		return tea.Quit
	case "help":
		m.switchView(m.view)
		m.openScreen(modeHelp)
		return nil
	case "cost", "costs":
		return m.openCost(arg)
	default:
		return m.setFlash("unknown command :"+s+" (tab completes: :instances :containers :types :events :cost :q)", true)
	}
	m.switchView(v)
	if arg != "" {
		// `:containers Running`: the argument filters the view.
		m.table().SetFilter(arg)
	}
	return nil
}
