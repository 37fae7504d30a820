// Package tui is the console: a Bubble Tea v2 program showing a
// dispatcher's instances, containers, types and events live, through the
// backend.Backend interface only.
package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/dialog"
	"dispatch-tui/tui/keys"
	"dispatch-tui/tui/table"
	"dispatch-tui/tui/theme"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// Options configure the console.
type Options struct {
	Backend  backend.Backend
	ReadOnly bool // --read-only: no verbs offered, header shows RO
	// ReadOnlyReason says why the console is read-only when it is not
	// the user's choice (e.g. a viewer token); shown on a verb key and in
	// the help.
	ReadOnlyReason string
	Refresh        time.Duration     // poll interval when Changes is quiet (default 1s)
	KeyOverrides   map[string]string // [tui.keys]: action name -> key(s), e.g. "hold" -> "H"
	Theme          string            // auto | dark | light
	NoColor        bool              // NO_COLOR: no colours, state always as text
}

// Minimum terminal size; below it the console shows "terminal too small".
const (
	MinWidth  = 60
	MinHeight = 16
)

const (
	headerLines = 6 // 4 header lines, flash, tab bar
	flashFor    = 4 * time.Second
	verbTimeout = 30 * time.Second
	logTail     = 500
	detailTail  = 15
	sparkLen    = 60
	// asyncRows is the table size from which a sort or filter change is
	// computed off the UI goroutine (tens of milliseconds at a million
	// rows); smaller tables sort and filter within the key's frame.
	asyncRows = 50_000
)

type mode int

const (
	modeNormal mode = iota
	modeCommand
	modeFilter
	modeHelp
	modeDetails
	modeLogs
	modeSearch // typing a search of the logs
	modeYaml   // the object under the cursor as YAML
	modePrio   // typing a container's new priority
	modeCost   // the :cost view (cost.go)
)

// Messages. Every result of a Cmd carries the values it was started with;
// none reads the model.
type (
	snapshotMsg struct {
		gen  uint64
		snap *backend.Snapshot
		err  error
		// rows are the snapshot's table rows for every view but the
		// containers, built and compared with the tables by the fetch
		// off the UI goroutine (nil: do it on load).
		rows *viewPrepared
		// ctrs are the snapshot's containers as rows (its Rows, or
		// made from its Containers): the containers table's source.
		ctrs *backend.Rows
	}
	pollMsg     struct{ seq uint64 }
	changedMsg  struct{}
	flashEndMsg struct{ seq uint64 }
	verbMsg     struct {
		action string
		view   viewID // whose rows ids are (the flash counts "3 containers"; failures are marked again)
		ids    []string
		failed map[string]error
	}
	logsMsg struct {
		gen    uint64
		id     string
		detail bool
		data   []byte
		err    error
	}
)

// verbTarget is one row a verb applies to, with the verb to send for it:
// an instance verb, or a container verb (prio the value of
// view.ContainerPriority).
type verbTarget struct {
	id   string
	inst view.InstanceVerb
	ctr  view.ContainerVerb
	prio int
}

type pendingVerb struct {
	action  string
	view    viewID
	targets []verbTarget
	paused  bool
}

// Model is the root model. It implements tea.Model.
type Model struct {
	ctx  context.Context
	opts Options
	be   backend.Backend
	km   *keys.Keymap
	th   *theme.Theme
	now  func() time.Time
	// tick schedules a message after a delay (tea.Tick); tests swap it
	// for one that never fires, so a command can be told from a timer.
	tick func(time.Duration, func(time.Time) tea.Msg) tea.Cmd

	width, height int
	view          viewID
	mode          mode
	prevMode      mode
	tables        [nViews]*table.Table
	snapRows      *viewPrepared // rows of snap, prepared by the fetch
	stale         [nViews]bool
	snap          *backend.Snapshot
	ctrs          *backend.Rows // snap's containers as rows
	// ctrSrc is the containers table's source: over ctrs, the same one
	// while ctrs is (ctrsource.go).
	ctrSrc  *ctrSource
	full    fullRecord // the record of the container shown, when snap has none (full.go)
	snapErr error

	fetchGen uint64 // generation of the latest fetch started
	fetching bool
	again    bool   // a change arrived while a fetch was in flight
	pollSeq  uint64 // only the latest armed poll tick counts

	queueSpark, costSpark ring

	flash    string
	flashErr bool
	flashSeq uint64

	in        textinput.Model // the `:`, filter and log search prompt
	inputFrom mode            // the mode to go back to when it closes
	history   []string        // `:` commands run, oldest first
	histPos   int

	dlg    *dialog.Confirm
	dlgFor *pendingVerb

	prioFor []string // the containers whose priority is being typed (`e`)

	vp         viewport.Model // help, details and logs
	screenWrap bool           // details and logs wrap long lines
	help       help.Model
	spin       spinner.Model
	spinArmed  bool
	spinSeq    uint64
	// inflight counts verbs sent and not answered; inflightWhat names the
	// latest, for the footer's spinner.
	inflight     int
	inflightWhat string
	// inflightDone counts, for the last verb sent on many containers,
	// how many of inflightTotal the backend has answered for: its
	// goroutine adds, the footer reads.
	inflightDone  *atomic.Int64
	inflightTotal int
	footerCache   footerCache

	pending map[string]uint64 // row id -> fetch gen that clears it (0 = verb in flight)

	detailID   string
	detailView viewID
	detailLogs string

	yamlView viewID // the YAML view's object
	yamlID   string

	pg pagerState // horizontal offset, log search, way back (pager.go)

	logID     string
	logLines  []string
	logFollow bool
	logGen    uint64
	logBusy   bool

	mouse bool

	ctrIdx map[string]int32 // container id -> index in snap, built on demand

	insp inspectState // drill-down, aged-out events, failure count (inspect.go)

	cost costState // the :cost view and the details' costs (cost.go)
}

// New builds the console's model. It fails on unknown action names in
// KeyOverrides and on duplicate bindings (naming both actions).
func New(opts Options) (*Model, error) { return newModel(opts, time.Now) }

func newModel(opts Options, now func() time.Time) (*Model, error) {
	if opts.Backend == nil {
		return nil, errors.New("tui: no backend")
	}
	km, err := keys.New(opts.KeyOverrides, sortKeys())
	if err != nil {
		return nil, err
	}
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	switch opts.Theme {
	case "", "auto", "dark", "light":
	default:
		return nil, fmt.Errorf("tui: theme %q: want auto, dark or light", opts.Theme)
	}
	m := &Model{
		ctx: context.Background(), opts: opts, be: opts.Backend, km: km, now: now, tick: tea.Tick,
		th:      theme.New(opts.Theme, true, opts.NoColor),
		pending: map[string]uint64{},
		in:      newInput(opts.Theme != "light", opts.NoColor), vp: newViewport(), help: newHelp(opts.Theme != "light", opts.NoColor),
		spin:       newSpinner(),
		screenWrap: true,
	}
	cols := [nViews][]table.Column{instanceColumns(), containerColumns(), typeColumns(), eventColumns()}
	for i := range m.tables {
		m.tables[i] = table.New(cols[i], m.th)
		m.tables[i].SetAsync(asyncRows)
	}
	m.queueSpark.n, m.costSpark.n = sparkLen, sparkLen
	return m, nil
}

// Init starts the first snapshot fetch (and asks the terminal for its
// background colour when the theme is auto).
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.startFetch(), m.armSpin()}
	if m.opts.ReadOnly && m.opts.ReadOnlyReason != "" {
		cmds = append(cmds, m.setFlash("read-only: "+m.opts.ReadOnlyReason, false))
	}
	if !m.opts.NoColor && (m.opts.Theme == "" || m.opts.Theme == "auto") {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

// startFetch starts a snapshot fetch unless one is in flight.
func (m *Model) startFetch() tea.Cmd {
	if m.fetching {
		m.again = true
		return nil
	}
	m.fetching, m.again = true, false
	m.fetchGen++
	gen, be, ctx, now, bases, prev := m.fetchGen, m.be, m.ctx, m.now, m.bases(), m.ctrs
	return func() tea.Msg {
		s, err := be.Snapshot(ctx)
		msg := snapshotMsg{gen: gen, snap: s, err: err}
		if err == nil && s != nil {
			// Building and comparing 10,000 instances' rows takes
			// milliseconds: do it here, not in Update, where it would
			// delay key presses.
			msg.ctrs = rowsOf(s, prev)
			msg.rows = prepareRows(s, now(), &bases)
		}
		return msg
	}
}

func (m *Model) armPoll() tea.Cmd {
	m.pollSeq++
	seq := m.pollSeq
	return m.tick(m.opts.Refresh, func(time.Time) tea.Msg { return pollMsg{seq: seq} })
}

func (m *Model) setFlash(s string, isErr bool) tea.Cmd {
	return m.setFlashFor(s, isErr, flashFor)
}

// setFlashFor shows s on the flash line for d.
func (m *Model) setFlashFor(s string, isErr bool, d time.Duration) tea.Cmd {
	m.flash, m.flashErr = s, isErr
	m.flashSeq++
	seq := m.flashSeq
	return m.tick(d, func(time.Time) tea.Msg { return flashEndMsg{seq: seq} })
}

// scope is where keys are looked up: the screen over the table (help,
// details, logs, YAML: a pager's keys) or the table view.
func (m *Model) scope() keys.Scope {
	switch m.screenMode() {
	case modeHelp, modeDetails, modeLogs, modeYaml, modeCost:
		return keys.Pager
	}
	switch m.view {
	case vInstances:
		return keys.Instances
	case vContainers:
		return keys.Containers
	}
	return keys.Tables
}

func (m *Model) table() *table.Table { return m.tables[m.view] }

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := m.update(msg)
	if job := m.table().OrderJob(); job != nil {
		// A sort or filter of a large table: computed in the background,
		// the previous rows shown meanwhile with the spinner.
		v := m.view
		cmd = tea.Batch(cmd, func() tea.Msg { return orderMsg{view: v, res: job()} })
	}
	if m.table().Busy() != "" {
		cmd = tea.Batch(cmd, m.armSpin())
	}
	return m, cmd
}

// orderMsg carries a table's sort and filter computed in the background.
type orderMsg struct {
	view viewID
	res  table.OrderResult
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case orderMsg:
		m.tables[msg.view].SetOrder(msg.res)
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.resize()
	case tea.BackgroundColorMsg:
		m.th = theme.New(m.opts.Theme, msg.IsDark(), m.opts.NoColor)
		dark := msg.IsDark() && m.opts.Theme != "light" || m.opts.Theme == "dark"
		m.help = newHelp(dark, m.opts.NoColor)
		m.in.SetStyles(inputStyles(dark, m.opts.NoColor))
		m.footerCache.ok = false
		for _, t := range m.tables {
			t.SetTheme(m.th)
		}
	case snapshotMsg:
		return m, m.onSnapshot(msg)
	case pollMsg:
		if msg.seq != m.pollSeq {
			return m, nil
		}
		return m, m.startFetch()
	case changedMsg:
		return m, m.startFetch()
	case flashEndMsg:
		if msg.seq == m.flashSeq {
			m.flash = ""
		}
	case verbMsg:
		m.inflight = max(m.inflight-1, 0)
		return m, m.onVerb(msg)
	case shellDoneMsg:
		return m, m.onShellDone(msg)
	case spinMsg:
		return m, m.onSpin(msg)
	case logsMsg:
		m.onLogs(msg)
		m.syncScreen()
	case fullMsg:
		m.onFull(msg)
	case costMsg:
		return m, m.onCost(msg)
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case tea.MouseWheelMsg:
		if m.mouse {
			d := 3
			if msg.Button == tea.MouseWheelUp {
				d = -3
			}
			if m.mode == modeNormal {
				m.table().Move(d)
			} else if d < 0 {
				m.vp.ScrollUp(-d)
				m.logFollow = false
			} else {
				m.vp.ScrollDown(d)
			}
		}
	case tea.MouseClickMsg:
		if m.mouse && m.mode == modeNormal && msg.Y > headerLines {
			m.table().ClickRow(msg.Y - headerLines - 1)
		}
	}
	return m, nil
}

func (m *Model) resize() {
	h := max(m.height-headerLines-1, 2)
	for _, t := range m.tables {
		t.SetSize(m.width, h)
	}
	m.syncScreen()
}

func (m *Model) onSnapshot(msg snapshotMsg) tea.Cmd {
	if msg.gen != m.fetchGen {
		return nil // stale
	}
	m.fetching = false
	var cmds []tea.Cmd
	if backend.IsFatal(msg.err) { // retrying cannot help: exit with it
		m.insp.fatal = msg.err
		return tea.Quit
	}
	if msg.err != nil {
		m.snapErr = msg.err
	} else if msg.snap != nil {
		m.snapErr = nil
		if m.snap != nil {
			if b := takeover(m.snap.Cluster, msg.snap.Cluster); b != "" {
				cmds = append(cmds, m.setFlashFor(b, true, takeoverFor))
			}
		}
		m.snap = msg.snap
		prev := m.ctrs
		m.snapRows, m.ctrs = msg.rows, msg.ctrs
		if m.snapRows == nil { // a snapshot not from startFetch
			b := m.bases()
			m.ctrs = rowsOf(m.snap, prev)
			m.snapRows = prepareRows(m.snap, m.now(), &b)
		}
		m.ctrIdx = nil
		s := msg.snap.Summary
		m.queueSpark.addAt(m.now(), float64(s.Containers[view.Queued]+s.Containers[view.Locked]))
		m.costSpark.addAt(m.now(), s.PricePerHour)
		for i := range m.stale {
			m.stale[i] = true
		}
		m.refreshTable(m.view)
		for id, g := range m.pending {
			if g != 0 && msg.gen >= g {
				delete(m.pending, id)
				for _, t := range m.tables {
					t.SetPending(id, false)
				}
			}
		}
	}
	if md := m.screenMode(); md == modeDetails || md == modeYaml {
		m.syncScreen()
	}
	cmds = append(cmds, m.armSpin())
	if m.again {
		cmds = append(cmds, m.startFetch())
	} else {
		cmds = append(cmds, m.armPoll())
	}
	if c := m.fetchLogs(); c != nil {
		cmds = append(cmds, c)
	}
	if c := m.fetchCost(); c != nil {
		cmds = append(cmds, c)
	}
	return tea.Batch(cmds...)
}

// viewPrepared holds a snapshot's rows for each view, compared with the
// view's table.
type viewPrepared [nViews]*table.Prepared

// bases takes every table's data for prepareRows.
func (m *Model) bases() [nViews]table.Base {
	var b [nViews]table.Base
	for v, t := range m.tables {
		b[v] = t.Base()
	}
	return b
}

// prepareRows builds the rows of every view but the containers (whose
// table reads the compact rows themselves) from s and compares them with
// the tables' data in bases; it may run off the UI goroutine.
func prepareRows(s *backend.Snapshot, now time.Time, bases *[nViews]table.Base) *viewPrepared {
	var p viewPrepared
	for v := range p {
		if viewID(v) != vContainers {
			p[v] = bases[v].Prepare(viewRowsOf(s, viewID(v), now))
		}
	}
	return &p
}

// rowsOf returns s's containers as rows (made from its records, their
// versions following prev's, when it has none).
func rowsOf(s *backend.Snapshot, prev *backend.Rows) *backend.Rows {
	if s.Rows != nil {
		return s.Rows
	}
	return backend.NewRows(s.Containers, prev)
}

func viewRowsOf(s *backend.Snapshot, v viewID, now time.Time) []table.Row {
	switch v {
	case vInstances:
		return instanceRows(s, now)
	case vTypes:
		return typeRows(s)
	case vEvents:
		return eventRows(s)
	}
	return nil
}

// refreshTable loads the snapshot into a view's table if it is stale.
func (m *Model) refreshTable(v viewID) {
	if m.snap == nil || !m.stale[v] {
		return
	}
	m.stale[v] = false
	follow := v == vEvents && m.tables[v].AtTop() // newest first: stay on the newest
	if v == vContainers {
		if m.ctrSrc == nil || m.ctrSrc.rows != m.ctrs {
			m.ctrSrc = &ctrSource{rows: m.ctrs, now: m.now}
		}
		m.tables[v].SetSource(m.ctrSrc)
	} else {
		m.tables[v].SetPrepared(m.snapRows[v])
	}
	if follow {
		m.tables[v].Home()
	}
}

func (m *Model) switchView(v viewID) {
	m.view = v
	m.mode = modeNormal
	m.refreshTable(v)
}

// fetchLogs polls the logs of the open logs view or container details,
// and the record of the container shown (fetchFull).
func (m *Model) fetchLogs() tea.Cmd {
	return batch(m.fetchFull(), m.fetchLogsOnly())
}

// fetchLogsOnly is fetchLogs without the container's record.
func (m *Model) fetchLogsOnly() tea.Cmd {
	var id string
	var tail int
	detail := false
	switch {
	case m.screenMode() == modeLogs:
		id, tail = m.logID, logTail
	case m.screenMode() == modeDetails && m.detailView == vContainers:
		id, tail, detail = m.detailID, detailTail, true
	default:
		return nil
	}
	if m.logBusy || id == "" {
		return nil
	}
	m.logBusy = true
	m.logGen++
	gen, be, ctx := m.logGen, m.be, m.ctx
	return func() tea.Msg {
		b, err := be.Logs(ctx, id, tail)
		return logsMsg{gen: gen, id: id, detail: detail, data: b, err: err}
	}
}

func (m *Model) onLogs(msg logsMsg) {
	if msg.gen != m.logGen {
		return
	}
	m.logBusy = false
	text := string(msg.data)
	if msg.err != nil {
		// The engine's words: "no output yet" for an unfinished
		// container, "output unavailable: <why>" for a finished one.
		text = "(" + msg.err.Error() + ")"
	}
	if msg.detail {
		if m.screenMode() == modeDetails && msg.id == m.detailID {
			m.detailLogs = text
		}
		return
	}
	if m.screenMode() != modeLogs || msg.id != m.logID {
		return
	}
	m.logLines = termsafe.Lines(strings.TrimRight(text, "\n"))
	m.findHits()
}

func (m *Model) bodyHeight() int { return max(m.height-headerLines-1, 1) }
