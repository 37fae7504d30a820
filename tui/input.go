package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"dispatch-tui/tui/dialog"
	"dispatch-tui/tui/keys"
)

// Keys and typed input: the key dispatch of every mode, the filter and
// `:` command prompts, and scrolling.

func (m *Model) scrollBy(d int) {
	switch m.mode {
	case modeNormal:
		m.table().Move(d)
	case modeLogs:
		m.logFollow = false
		m.scroll = max(min(m.scroll+d, len(m.logLines)-m.bodyHeight()), 0)
	case modeDetails, modeHelp:
		m.scroll = max(m.scroll+d, 0)
	}
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
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
	case modeCommand:
		return m.onInput(msg, func(s string) tea.Cmd { return m.command(s) }, nil)
	case modeFilter:
		return m.onInput(msg, func(string) tea.Cmd { return nil }, func(s string) { m.table().SetFilter(s) })
	}
	act := m.km.Lookup(m.scope(), k)
	// Modes layered over the table: scrolling keys scroll them.
	if m.mode == modeDetails {
		if cmd, ok := m.detailKey(act); ok { // drill-down (inspect.go)
			return cmd
		}
	}
	if m.mode == modeHelp || m.mode == modeDetails || m.mode == modeLogs {
		switch act {
		case keys.Up:
			m.scrollBy(-1)
			return nil
		case keys.Down:
			m.scrollBy(1)
			return nil
		case keys.PageUp:
			m.scrollBy(-m.bodyHeight())
			return nil
		case keys.PageDown:
			m.scrollBy(m.bodyHeight())
			return nil
		case keys.Top:
			m.logFollow = false
			m.scroll = 0
			return nil
		case keys.Bottom:
			if m.mode == modeLogs {
				m.logFollow = true
				m.scroll = max(len(m.logLines)-m.bodyHeight(), 0)
			}
			return nil
		case keys.Back:
			m.mode, m.scroll = modeNormal, 0
			return nil
		case keys.Help:
			if m.mode == modeHelp {
				m.mode, m.scroll = m.prevMode, 0
				return nil
			}
		case keys.Details, keys.Mark, keys.MarkAll, keys.Filter:
			return nil
		}
		if m.mode == modeHelp && act != keys.Quit && act != keys.Command {
			return nil
		}
	}
	if act == "" {
		if len(k) == 1 && k[0] >= 'A' && k[0] <= 'Z' && m.mode == modeNormal {
			m.table().SortBy(k)
		}
		return nil
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
		m.prevMode, m.mode, m.scroll = m.mode, modeHelp, 0
	case keys.Command:
		m.mode, m.input = modeCommand, ""
	case keys.Filter:
		m.mode, m.input = modeFilter, m.table().Filter()
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
	case keys.Details:
		id := m.table().Cursor()
		if id == "" {
			return nil
		}
		m.mode, m.detailID, m.detailView, m.detailLogs, m.scroll = modeDetails, id, m.view, "", 0
		m.insp.back = m.insp.back[:0] // opened from the table: esc goes back there
		return m.fetchLogs()
	case keys.Logs:
		id := m.table().Cursor()
		if m.mode == modeDetails {
			id = m.detailID
		}
		if (m.mode == modeDetails && m.detailView != vContainers) || (m.mode != modeDetails && m.view != vContainers) || id == "" {
			return m.setFlash("logs: select a container (2)", true)
		}
		m.mode, m.logID, m.logLines, m.logFollow, m.scroll = modeLogs, id, nil, true, 0
		m.logBusy = false
		return m.fetchLogs()
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
	default:
		return m.verb(act)
	}
	return nil
}

func (m *Model) onInput(msg tea.KeyPressMsg, enter func(string) tea.Cmd, live func(string)) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.mode = modeNormal
		if live != nil {
			live("")
		}
		m.input = ""
		return nil
	case "enter":
		m.mode = modeNormal
		s := m.input
		m.input = ""
		return enter(s)
	case "backspace":
		if m.input != "" {
			r := []rune(m.input)
			m.input = string(r[:len(r)-1])
		}
	case "ctrl+u":
		m.input = ""
	default:
		if msg.Text == "" {
			return nil
		}
		m.input += msg.Text
	}
	if live != nil {
		live(m.input)
	}
	return nil
}

func (m *Model) command(s string) tea.Cmd {
	switch strings.TrimSpace(s) {
	case "":
	case "instances", "instance", "inst", "i", "in":
		m.switchView(vInstances)
	case "containers", "container", "ctr", "c", "co":
		m.switchView(vContainers)
	case "types", "type", "t":
		m.switchView(vTypes)
	case "events", "event", "ev", "e":
		m.switchView(vEvents)
	case "q", "quit", "q!":
		return tea.Quit
	case "help":
		m.prevMode, m.mode = modeNormal, modeHelp
	default:
		return m.setFlash("unknown command :"+s+" (try :instances :containers :types :events :q)", true)
	}
	return nil
}
