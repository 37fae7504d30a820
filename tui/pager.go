// The pager of the screens over the table: keys, horizontal scroll, log search.

package tui

// The pager the screens over the table share (help, details, logs, YAML):
// its keys (a pager user's; no single letter here changes state), the
// horizontal offset of unwrapped lines with their cut markers, the log
// search with its highlighted matches, and where esc goes back to.

import (
	"regexp"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"dispatch-tui/tui/keys"
	"dispatch-tui/tui/table"
)

// pagerState is the model's state for these.
type pagerState struct {
	// xOff is the first column shown when lines are not wrapped; every
	// screen opens at 0, and wrapping resets it.
	xOff int
	// back is where esc from logs or YAML returns: the table or the
	// details they were opened from.
	back   mode
	search logSearch
	// text is the screen's text as last shown, before cutting.
	text []string
	// searchFlash: the flash is the log search's, cleared when the logs
	// close (it says nothing about the table).
	searchFlash bool
}

// logSearch is the search in the logs: its pattern, the matches in the
// log lines and the current one.
type logSearch struct {
	term string
	re   *regexp.Regexp
	hits []hit
	cur  int
}

// hit is one match: a log line and its byte range in it.
type hit struct{ line, start, end int }

// cutMark marks a line cut at the screen's edge, on either side.
const cutMark = "…"

// onScreenKey handles a key on a screen over the table; done is false
// when the general handling applies (quit, `:`, views, mouse).
func (m *Model) onScreenKey(act, k string) (cmd tea.Cmd, done bool) {
	md, vp := m.mode, &m.vp
	switch act {
	case keys.Up:
		vp.ScrollUp(1)
	case keys.Down:
		vp.ScrollDown(1)
	case keys.PageUp:
		vp.PageUp()
	case keys.PageDown:
		vp.PageDown()
	case keys.Top:
		m.pg.xOff = 0
		m.syncScreen()
		vp.GotoTop()
	case keys.Bottom:
		vp.GotoBottom()
	case keys.Left, keys.Right:
		if md == modeHelp || m.screenWrap {
			return m.notHere(k, "lines wrap here;", m.km.Key(keys.Wrap), "turns wrapping off"), true
		}
		step := max(m.width/4, 8)
		if act == keys.Left {
			step = -step
		}
		m.pg.xOff = max(m.pg.xOff+step, 0)
		m.syncScreen()
	case keys.Back:
		return m.closeScreen(), true
	case keys.Help:
		if md != modeHelp {
			return nil, false
		}
		return m.closeScreen(), true
	case keys.Wrap:
		if md == modeHelp {
			return m.notHere(k), true
		}
		// The line at the top stays at the top.
		top := m.lineAt(m.vp.YOffset())
		m.screenWrap = !m.screenWrap
		m.pg.xOff = 0
		m.syncScreen()
		if !(md == modeLogs && m.logFollow) {
			m.vp.SetYOffset(m.rowOfLine(top))
		}
	case keys.Filter:
		if md != modeLogs {
			return m.notHere(k, "/ searches in logs"), true
		}
		m.openInput(modeSearch, "search: ", "")
		return nil, true
	case keys.Search, keys.SearchPrev:
		s := &m.pg.search
		if md != modeLogs || len(s.hits) == 0 {
			return m.notHere(k, "no search:", m.km.Key(keys.Filter), "searches the logs"), true
		}
		d := 1
		if act == keys.SearchPrev {
			d = len(s.hits) - 1
		}
		s.cur = (s.cur + d) % len(s.hits)
		m.showHit()
	case keys.Logs:
		if md == modeLogs {
			return m.notHere(k), true
		}
		if md != modeDetails || m.detailView != vContainers {
			return m.notHere(k, "logs are a container's"), true
		}
		return m.openLogs(m.detailID, modeDetails), true
	case keys.Yaml:
		if md != modeDetails {
			return m.notHere(k), true
		}
		return m.openYaml(m.detailView, m.detailID, modeDetails), true
	case keys.Copy:
		return m.copyID(), true
	case keys.Details:
		return m.notHere(k), true
	case "":
		return m.notHere(k), true
	default:
		return nil, false
	}
	if md == modeLogs {
		// Scrolling away from the end stops following; the end resumes it.
		m.logFollow = vp.AtBottom()
	}
	return nil, true
}

// closeScreen goes back from the screen shown: help to what it covered,
// logs and YAML to the details or table they were opened from, details
// to the table.
func (m *Model) closeScreen() tea.Cmd {
	switch m.mode {
	case modeHelp:
		m.mode = m.prevMode
		m.syncScreen()
		return nil
	case modeLogs, modeYaml:
		if m.pg.searchFlash {
			m.flash, m.pg.searchFlash = "", false
		}
		m.pg.search = logSearch{}
		if m.pg.back == modeDetails {
			m.openDetails(m.detailView, m.detailID)
			return m.fetchLogs()
		}
	}
	m.mode = modeNormal
	return nil
}

// openLogs shows a container's logs, following; back is where esc
// returns.
func (m *Model) openLogs(id string, back mode) tea.Cmd {
	m.logID, m.logLines, m.logFollow = id, nil, true
	m.pg.search, m.pg.back = logSearch{}, back
	m.openScreen(modeLogs)
	m.logBusy = false
	return m.fetchLogs()
}

// searchFlash sets a flash about the log search.
func (m *Model) searchFlash(s string, isErr bool) tea.Cmd {
	cmd := m.setFlash(s, isErr)
	m.pg.searchFlash = true
	return cmd
}

// searchLogs finds a pattern in the logs (read as the table's filter
// reads it) and shows the first match at or below the top of the screen.
func (m *Model) searchLogs(term string) tea.Cmd {
	m.pg.search = logSearch{term: term}
	if term == "" {
		m.syncScreen()
		return nil
	}
	re, err := table.Regexp(term)
	m.pg.search.re = re
	m.findHits()
	s := &m.pg.search
	if len(s.hits) == 0 {
		m.syncScreen()
		return m.searchFlash("search: no match for "+term, true)
	}
	m.logFollow = false
	top := m.vp.YOffset()
	for i, h := range s.hits {
		if m.rowOf(h) >= top {
			s.cur = i
			break
		}
	}
	m.showHit()
	if err != nil {
		return m.searchFlash("search: not a valid regular expression ("+err.Error()+"); matching it as text", true)
	}
	return nil
}

// findHits finds the search's matches in the log lines (again when they
// change), keeping the current one's index where it can.
func (m *Model) findHits() {
	s := &m.pg.search
	s.hits = s.hits[:0]
	if s.re == nil {
		return
	}
	for i, l := range m.logLines {
		for _, r := range s.re.FindAllStringIndex(l, -1) {
			if r[1] > r[0] {
				s.hits = append(s.hits, hit{i, r[0], r[1]})
			}
		}
	}
	s.cur = min(s.cur, max(len(s.hits)-1, 0))
}

// searchStatus is the search's place for the logs' footer: "match 2 of 6".
func (m *Model) searchStatus() string {
	s := &m.pg.search
	if s.term == "" || len(s.hits) == 0 {
		return ""
	}
	return "match " + strconv.Itoa(s.cur+1) + " of " + strconv.Itoa(len(s.hits))
}

// rowOf is the screen row (from the top of the text) where a match
// shows: with wrapping, the lines above take as many rows as they wrap to.
func (m *Model) rowOf(h hit) int {
	if !m.screenWrap {
		return h.line
	}
	w, row := max(m.width, 1), 0
	for _, l := range m.logLines[:h.line] {
		row += max((ansi.StringWidth(l)+w-1)/w, 1)
	}
	return row + ansi.StringWidth(m.logLines[h.line][:h.start])/w
}

// rowOfLine is the screen row (from the top of the text) where a line
// of the screen's text starts.
func (m *Model) rowOfLine(line int) int {
	if !m.screenWrap {
		return line
	}
	w, row := max(m.width, 1), 0
	for _, l := range m.pg.text[:min(line, len(m.pg.text))] {
		row += max((ansi.StringWidth(l)+w-1)/w, 1)
	}
	return row
}

// lineAt is the line of the screen's text shown at a screen row.
func (m *Model) lineAt(row int) int {
	if !m.screenWrap {
		return row
	}
	w, r := max(m.width, 1), 0
	for i, l := range m.pg.text {
		r += max((ansi.StringWidth(l)+w-1)/w, 1)
		if r > row {
			return i
		}
	}
	return len(m.pg.text)
}

// showHit scrolls to the current match: down to its row, and across to
// its columns when lines are not wrapped.
func (m *Model) showHit() {
	s := &m.pg.search
	if len(s.hits) == 0 {
		return
	}
	h := s.hits[s.cur]
	m.logFollow = false
	if !m.screenWrap {
		l := m.logLines[h.line]
		c0 := ansi.StringWidth(l[:h.start])
		c1 := c0 + ansi.StringWidth(l[h.start:h.end])
		if w := max(m.width, 1); c0 < m.pg.xOff+1 || c1 > m.pg.xOff+w-1 {
			m.pg.xOff = max(c0-w/4, 0)
		}
	}
	m.syncScreen()
	row, y, vh := m.rowOf(h), m.vp.YOffset(), m.vp.Height()
	if row < y || row >= y+vh {
		m.vp.SetYOffset(max(row-vh/3, 0))
	}
}

// paintHits highlights the search's matches in the log lines.
func (m *Model) paintHits(lines []string) []string {
	s := &m.pg.search
	if len(s.hits) == 0 {
		return lines
	}
	out := make([]string, len(lines))
	copy(out, lines)
	for i := 0; i < len(s.hits); {
		li := s.hits[i].line
		if li >= len(lines) {
			break
		}
		l := lines[li]
		var b strings.Builder
		at := 0
		for ; i < len(s.hits) && s.hits[i].line == li; i++ {
			h := s.hits[i]
			p := m.th.Match
			if i == s.cur {
				p = m.th.Selected
			}
			b.WriteString(l[at:h.start])
			b.WriteString(p.Render(l[h.start:h.end]))
			at = h.end
		}
		b.WriteString(l[at:])
		out[li] = b.String()
	}
	return out
}

// cutLines shows the columns from the horizontal offset of each line,
// with a cut marker where a line goes on past either edge.
func (m *Model) cutLines(lines []string, w int) []string {
	longest := 0
	for _, l := range lines {
		longest = max(longest, ansi.StringWidth(l))
	}
	m.pg.xOff = min(m.pg.xOff, max(longest-w+1, 0))
	x := m.pg.xOff
	out := make([]string, len(lines))
	for i, l := range lines {
		lw := ansi.StringWidth(l)
		if x == 0 && lw <= w {
			out[i] = l
			continue
		}
		if x >= lw {
			if lw > 0 {
				out[i] = cutMark
			}
			continue
		}
		from, to := x, x+w
		left, right := x > 0, lw > x+w
		if left {
			from++
		}
		if right {
			to--
		}
		s := ansi.Cut(l, from, to)
		if left {
			s = cutMark + s
		}
		if right {
			s += cutMark
		}
		out[i] = s
	}
	return out
}
