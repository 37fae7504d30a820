// The screens over the table (help, details, logs), the footer's help and the spinner.

package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	bkey "charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"dispatch-tui/engine/api"
	"dispatch-tui/tui/keys"
	"dispatch-tui/tui/table"
)

// The screens over the table (help, details, logs) in one bubbles
// viewport; the footer's short help and the full help from bubbles'
// help.Model; the spinner of a verb in flight or a reconnecting backend.

const spinEvery = 120 * time.Millisecond

type spinMsg struct{ seq uint64 }

func newViewport() viewport.Model {
	vp := viewport.New()
	vp.FillHeight = true
	return vp
}

func newHelp(dark, noColor bool) help.Model {
	h := help.New()
	if noColor {
		h.Styles = help.Styles{}
	} else {
		h.Styles = help.DefaultStyles(dark)
	}
	// Items that do not fit are left out whole, without a cut marker
	// (`?` lists them all); two spaces apart, the table's 80 columns
	// hold every verb of a view.
	h.ShortSeparator = "  "
	h.Ellipsis = ""
	return h
}

func newSpinner() spinner.Model { return spinner.New(spinner.WithSpinner(spinner.MiniDot)) }

// spinning reports whether something is in flight the user waits for:
// a verb, a failing backend, or the first snapshot (whose frames also
// redraw its progress, loadingText).
func (m *Model) spinning() bool {
	return m.inflight > 0 || m.snapErr != nil || m.snap == nil && m.fetching
}

// working is the sort or filter of the table shown being computed in the
// background ("" = none); the tab bar shows it with the spinner.
func (m *Model) working() string { return m.table().Busy() }

// armSpin starts the spinner's frames if something is in flight and they
// are not running yet. Frames come from our own tick (m.tick), so tests
// control them like every other timer.
func (m *Model) armSpin() tea.Cmd {
	if !m.spinning() && m.working() == "" || m.spinArmed {
		return nil
	}
	m.spinArmed = true
	m.spinSeq++
	seq := m.spinSeq
	return m.tick(spinEvery, func(time.Time) tea.Msg { return spinMsg{seq: seq} })
}

func (m *Model) onSpin(msg spinMsg) tea.Cmd {
	if msg.seq != m.spinSeq {
		return nil
	}
	m.spinArmed = false
	if !m.spinning() && m.working() == "" {
		return nil
	}
	m.spin, _ = m.spin.Update(spinner.TickMsg{ID: m.spin.ID()})
	return m.armSpin()
}

// screenMode is the screen under a prompt being typed (the mode itself
// otherwise).
func (m *Model) screenMode() mode {
	switch m.mode {
	case modeCommand, modeFilter, modeSearch, modePrio:
		return m.inputFrom
	}
	return m.mode
}

// openScreen shows help, details or logs.
func (m *Model) openScreen(md mode) {
	if md == modeHelp && m.mode != modeHelp {
		m.prevMode = m.mode
	}
	m.mode = md
	m.pg.xOff = 0 // every screen opens at column 0
	m.vp.SetYOffset(0)
	m.syncScreen()
}

// syncScreen puts the open screen's text in the viewport, keeping the
// scroll position (or the end, for logs that follow). Unwrapped lines
// are cut here, from the pager's offset, so the viewport's own
// horizontal offset stays 0.
func (m *Model) syncScreen() {
	var lines []string
	md := m.screenMode()
	switch md {
	case modeHelp:
		for _, l := range m.helpLines() {
			lines = append(lines, strings.Split(lipgloss.Wrap(l, max(m.width, 1), " "), "\n")...)
		}
	case modeDetails:
		lines = m.detailLines()
	case modeLogs:
		lines = m.paintHits(m.logLines)
		if len(lines) == 0 {
			lines = []string{"(waiting for output…)"}
		}
	case modeYaml:
		lines = m.yamlLines()
	case modeCost:
		lines = m.costLines()
	default:
		return
	}
	m.pg.text = lines
	w := max(m.width, 1)
	wrap := m.screenWrap || md == modeHelp // help is wrapped above
	if wrap {
		m.pg.xOff = 0
	} else {
		lines = m.cutLines(lines, w)
	}
	m.vp.SoftWrap = wrap
	m.vp.SetWidth(w)
	m.vp.SetHeight(m.bodyHeight())
	m.vp.SetXOffset(0)
	y := m.vp.YOffset()
	m.vp.SetContentLines(slices.Clone(lines)) // it may split lines in place
	if md == modeLogs && m.logFollow {
		m.vp.GotoBottom()
	} else {
		m.vp.SetYOffset(y)
	}
}

// helpLines is the full help: the keymap in sections rendered by
// bubbles' help, then this view's sort keys.
func (m *Model) helpLines() []string {
	out := []string{"Keys (rebind in [tui.keys] of the config; esc or ? closes, ↑↓ scroll):"}
	h := m.help
	h.SetWidth(0)
	for _, s := range m.km.Full(m.opts.ReadOnly) {
		out = append(out, "", m.th.Bold.Render(string(s.Title)))
		out = append(out, strings.Split(h.FullHelpView([][]bkey.Binding{s.Bindings}), "\n")...)
	}
	out = append(out, "", m.th.Bold.Render("Sorting"),
		"shift+letter sorts by the column whose letter is underlined in the header;",
		"the same letter again inverts; the sorted column shows ↑ or ↓.")
	var ks []string
	for _, c := range m.table().Columns() {
		if c.SortKey != "" {
			ks = append(ks, c.SortKey+"="+c.Title)
		}
	}
	out = append(out, "This view: "+strings.Join(ks, "  "))
	out = append(out, "", "Logs: "+strings.Join(m.km.Keys(keys.Bottom), "/")+" follows the end; scrolling up stops following.")
	if m.opts.ReadOnly {
		out = append(out, "", "Read-only: verbs are disabled.")
		if m.opts.ReadOnlyReason != "" {
			out = append(out, "  ("+m.opts.ReadOnlyReason+")")
		}
	}
	return out
}

// footer is the prompt being typed, or the short help of what can be done
// here, after the spinner when something is in flight.
// inflightLabel names the verb in flight, with its progress when it is
// sent in several bulk requests ("kill (80000): 15000 of 80000").
func (m *Model) inflightLabel() string {
	if m.inflightDone == nil || m.inflightTotal <= api.MaxBatchItems {
		return m.inflightWhat
	}
	return fmt.Sprintf("%s: %d of %d", m.inflightWhat, m.inflightDone.Load(), m.inflightTotal)
}

func (m *Model) footer() string {
	w := m.width
	switch m.mode {
	case modeCommand, modeFilter, modeSearch, modePrio:
		m.in.SetWidth(0)
		hint := "  enter: run  tab: complete  esc: cancel"
		switch m.mode {
		case modeFilter:
			hint = "  enter: keep  esc: clear  (! inverts)"
			if err := table.FilterError(m.in.Value()); err != nil {
				hint = "  not a valid regexp: matching as text"
			}
		case modeSearch:
			hint = "  enter: search (substring or regexp)  esc: cancel"
		case modePrio:
			hint = "  enter: set  esc: cancel"
		}
		v := m.in.View()
		return ansi.Truncate(v+m.th.Dim.Render(hint), w, "…") + strings.Repeat(" ", max(w-ansi.StringWidth(v+hint), 0))
	}
	// The short help is rendered with lipgloss styles item by item: more
	// than the rest of a frame costs. It changes only with these.
	ck := footerKey{mode: m.mode, scope: m.scope(), width: w, follow: m.logFollow, logID: m.logID,
		detail: m.detailView, wrap: m.screenWrap, search: m.searchStatus(), off: m.snapErr != nil}
	if m.spinning() {
		ck.spin = m.spin.View() + m.inflightLabel()
		ck.spinning = true
	}
	if m.footerCache.ok && m.footerCache.key == ck {
		return m.footerCache.line
	}
	var prefix string
	if m.spinning() {
		what := "reconnecting…"
		if m.inflight > 0 {
			what = m.inflightLabel() + "…"
		}
		prefix = m.spin.View() + " " + what + "  "
	}
	var bs []bkey.Binding
	switch m.mode {
	case modeHelp:
		bs = m.km.ShortOf(keys.Quit, keys.Back, keys.Down, keys.PageDown, keys.Bottom)
		bs[1].SetHelp(m.km.Key(keys.Back), "close")
		bs[2].SetHelp("↑↓", "scroll")
	case modeLogs:
		prefix += "logs " + m.logID
		if m.logFollow {
			prefix += " (following)"
		}
		if s := m.searchStatus(); s != "" {
			prefix += "  " + s
		}
		prefix += "  "
		bs = m.km.ShortOf(keys.Quit, keys.Back, keys.Filter, keys.Search, keys.Bottom, keys.Wrap)
		bs[2].SetHelp(m.km.Key(keys.Filter), "search")
		bs[4].SetHelp(m.km.Key(keys.Bottom), "follow")
		bs = append(bs, m.scrollHelp()...)
	case modeDetails:
		bs = m.km.ShortOf(keys.Quit, keys.Back)
		if m.detailView == vContainers {
			bs = append(bs, m.km.ShortOf(keys.Logs)...)
		}
		bs = append(bs, m.km.ShortOf(keys.Yaml, keys.Copy, keys.Wrap)...)
		bs = append(bs, m.scrollHelp()...)
	case modeYaml:
		bs = m.km.ShortOf(keys.Quit, keys.Back, keys.Copy, keys.Wrap)
		bs = append(bs, m.scrollHelp()...)
	case modeCost:
		prefix += "cost  "
		bs = m.km.ShortOf(keys.Quit, keys.Back, keys.Command, keys.Wrap)
		bs[2].SetHelp(m.km.Key(keys.Command), "cost by…")
		bs = append(bs, m.scrollHelp()...)
	default:
		// Disconnected, the rows are stale and verbs refused: the footer
		// offers none.
		bs = m.km.Short(m.scope(), m.opts.ReadOnly || m.snapErr != nil)
	}
	h := m.help
	h.SetWidth(max(w-ansi.StringWidth(prefix), 0))
	line := prefix + h.ShortHelpView(bs)
	line += strings.Repeat(" ", max(w-ansi.StringWidth(line), 0))
	m.footerCache.key, m.footerCache.line, m.footerCache.ok = ck, line, true
	return line
}

// scrollHelp is the ←→ hint of a screen whose lines are not wrapped.
func (m *Model) scrollHelp() []bkey.Binding {
	if m.screenWrap {
		return nil
	}
	b := bkey.NewBinding(bkey.WithKeys(m.km.Keys(keys.Left)...), bkey.WithHelp("←→", "scroll"))
	return []bkey.Binding{b}
}

// footerKey is what the footer of the table, help, details and logs
// screens depends on (the keymap, theme and read-only flag are fixed
// once the theme is known: a theme change drops the cache).
type footerKey struct {
	mode     mode
	scope    keys.Scope
	width    int
	follow   bool
	logID    string
	detail   viewID
	wrap     bool
	search   string
	off      bool // disconnected
	spinning bool
	spin     string
}

type footerCache struct {
	key  footerKey
	line string
	ok   bool
}

// tooSmall is the message below the minimum size, wrapped to the width.
func tooSmall(w, h int) string {
	msg := fmt.Sprintf("terminal too small: %d×%d; need at least %d×%d", w, h, MinWidth, MinHeight)
	lines := strings.Split(lipgloss.Wrap(msg, max(w, 1), " "), "\n")
	if len(lines) > h && h > 0 {
		lines = lines[:h]
	}
	return strings.Join(lines, "\n")
}
