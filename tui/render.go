package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/worker"
	"dispatch-tui/tui/table"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// ring keeps the last n samples (one per snapshot) for a sparkline.
type ring struct {
	n    int
	vals []float64
}

func (r *ring) add(v float64) {
	if len(r.vals) == r.n {
		copy(r.vals, r.vals[1:])
		r.vals[len(r.vals)-1] = v
		return
	}
	r.vals = append(r.vals, v)
}

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// spark renders the last w samples.
func (r *ring) spark(w int) string {
	vs := r.vals
	if len(vs) > w {
		vs = vs[len(vs)-w:]
	}
	if len(vs) == 0 {
		return strings.Repeat(" ", w)
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	var b strings.Builder
	for _, v := range vs {
		i := 0
		if hi > lo {
			i = int((v - lo) / (hi - lo) * float64(len(sparkRunes)-1))
		}
		b.WriteRune(sparkRunes[i])
	}
	b.WriteString(strings.Repeat(" ", w-len(vs)))
	return b.String()
}

func fitLine(s string, w int) string { return table.Fit(s, w, false) }

func counts[K ~string](m map[K]int, order []K) string {
	var parts []string
	seen := map[K]bool{}
	for _, k := range order {
		seen[k] = true
		if n := m[k]; n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+string(k))
		}
	}
	var rest []K
	for k, n := range m {
		if !seen[k] && n > 0 {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, strconv.Itoa(m[k])+" "+string(k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

var instanceOrder = []worker.State{worker.StateRunning, worker.StateIdle, worker.StateBooting, worker.StateUnknown, worker.StateShutdown, worker.StateRefused, worker.StateForeign}

func (m *Model) header() []string {
	w := m.width
	var flags []string
	if m.opts.ReadOnly {
		flags = append(flags, "RO")
	}
	var l1, l2, l3, l4 string
	l1 = "dispatch-tui  " + m.be.Describe()
	if s := m.snap; s != nil {
		sum := s.Summary
		if sum.Paused {
			flags = append(flags, "PAUSED")
		}
		if sum.AtQuota {
			flags = append(flags, "AT QUOTA")
		}
		ni, nc := 0, 0
		live := 0
		for st, n := range sum.Instances {
			ni += n
			if st != worker.StateShutdown {
				live += n
			}
		}
		for _, n := range sum.Containers {
			nc += n
		}
		l2 = fmt.Sprintf("instances %d: %s", ni, counts(sum.Instances, instanceOrder))
		if n := unreachableCount(s.Instances); n > 0 {
			l2 += fmt.Sprintf("  UNREACHABLE %d", n)
		}
		l3 = fmt.Sprintf("containers %d: %s", nc, counts(sum.Containers, queue.States[:]))
		quota := "quota " + strconv.Itoa(live) + "/"
		if sum.QuotaLimit > 0 {
			quota += strconv.Itoa(sum.QuotaLimit)
		} else {
			quota += "∞"
		}
		depth := sum.Containers[queue.Queued] + sum.Containers[queue.Locked]
		sw := 20
		if w < 100 {
			sw = 12
		}
		l4 = fmt.Sprintf("$/h %.2f  %s  queue %s %d  $/h %s", sum.PricePerHour, quota,
			m.queueSpark.spark(sw), depth, m.costSpark.spark(sw))
	} else {
		l2 = "loading…"
	}
	if m.snapErr != nil {
		flags = append(flags, "STALE")
	}
	right := strings.Join(flags, " ") + "  " + m.now().Format("15:04:05")
	l1 = fitLine(l1, max(w-len([]rune(right))-1, 0)) + " " + right
	out := []string{m.th.Title.Render(fitLine(l1, w)), fitLine(l2, w), fitLine(l3, w), fitLine(l4, w)}
	if len(flags) > 0 && !m.th.NoColor {
		// paint the flags
		out[0] = m.th.Title.Render(fitLine(l1[:len(l1)-len(right)], w-len([]rune(right)))) + m.th.Warn.Render(right)
	}
	switch {
	case m.snapErr != nil && m.flash == "":
		out = append(out, m.th.FlashErr.Render(fitLine("snapshot: "+m.snapErr.Error(), w)))
	case m.flashErr:
		out = append(out, m.th.FlashErr.Render(fitLine(m.flash, w)))
	default:
		out = append(out, m.th.FlashOK.Render(fitLine(m.flash, w)))
	}
	return append(out, m.tabBar())
}

func (m *Model) tabBar() string {
	var b strings.Builder
	for i, n := range viewNames {
		tab := " " + strconv.Itoa(i+1) + ":" + n + " "
		if viewID(i) == m.view {
			b.WriteString(m.th.Selected.Render("[" + strings.TrimSpace(tab) + "]"))
		} else {
			b.WriteString(tab)
		}
	}
	t := m.table()
	info := fmt.Sprintf("  %d/%d", t.Shown(), t.Len())
	if f := t.Filter(); f != "" {
		info += "  filter:" + f
	}
	if n := len(t.Marked()); n > 0 {
		info += "  marked:" + strconv.Itoa(n)
	}
	if m.mouse {
		info += "  mouse"
	}
	plainLen := 0
	for i, n := range viewNames {
		plainLen += len(n) + 4
		_ = i
	}
	return b.String() + fitLine(info, max(m.width-plainLen, 0))
}

func (m *Model) footer() string {
	switch m.mode {
	case modeCommand:
		return fitLine(":"+m.input+"_", m.width)
	case modeFilter:
		return fitLine("/"+m.input+"_  (enter keep, esc clear; !inverts)", m.width)
	}
	k := m.km.Key
	var hints string
	switch m.mode {
	case modeHelp:
		hints = k("back") + " close help"
	case modeLogs:
		f := "off"
		if m.logFollow {
			f = "on"
		}
		hints = fmt.Sprintf("logs %s  follow:%s (%s)  %s back  ↑↓ scroll", m.logID, f, k("bottom"), k("back"))
	case modeDetails:
		hints = k("back") + " back  " + k("logs") + " logs  ↑↓ scroll"
	default:
		hints = fmt.Sprintf("%s help  : cmd  / filter  %s mark  %s details", k("help"), k("mark"), k("details"))
		if !m.opts.ReadOnly {
			switch m.view {
			case vInstances:
				hints += fmt.Sprintf("  %s hold %s drain %s run %s kill", k("hold"), k("drain"), k("run"), k("kill"))
			case vContainers:
				hints += fmt.Sprintf("  %s hold %s/%s prio %s kill %s logs", k("hold"), k("priority_up"), k("priority_down"), k("kill"), k("logs"))
			}
		}
		hints += "  " + k("quit") + " quit"
	}
	return m.th.Dim.Render(fitLine(hints, m.width))
}

// View renders the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	if m.mouse {
		v.MouseMode = tea.MouseModeCellMotion
	}
	v.WindowTitle = "dispatch-tui"
	return v
}

func (m *Model) render() string {
	if m.width == 0 || m.height == 0 {
		return "starting…"
	}
	if m.width < MinWidth || m.height < MinHeight {
		return fmt.Sprintf("terminal too small: %d×%d (need at least %d×%d)", m.width, m.height, MinWidth, MinHeight)
	}
	var b strings.Builder
	b.Grow(m.width * m.height * 2)
	for _, l := range m.header() {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	bh := m.bodyHeight()
	var body string
	switch m.mode {
	case modeHelp:
		body = m.textBody(m.helpLines(), bh)
	case modeDetails:
		body = m.textBody(m.detailLines(), bh)
	case modeLogs:
		body = m.textBody(m.logLines, bh)
	default:
		body = m.table().View()
	}
	if m.dlg != nil {
		body = overlay(body, m.dlg.View(m.th, m.width), m.width, bh)
	}
	b.WriteString(body)
	b.WriteByte('\n')
	b.WriteString(m.footer())
	return b.String()
}

// overlay replaces body lines with the dialog's, centred.
func overlay(body, box string, w, h int) string {
	lines := strings.Split(body, "\n")
	for len(lines) < h {
		lines = append(lines, "")
	}
	bl := strings.Split(box, "\n")
	top := max((h-len(bl))/2, 0)
	for i, l := range bl {
		if top+i >= len(lines) {
			break
		}
		lw := ansi.StringWidth(l)
		left := max((w-lw)/2, 0)
		lines[top+i] = strings.Repeat(" ", left) + l + strings.Repeat(" ", max(w-left-lw, 0))
	}
	return strings.Join(lines[:h], "\n")
}

func (m *Model) textBody(lines []string, h int) string {
	maxScroll := max(len(lines)-h, 0)
	m.scroll = min(m.scroll, maxScroll)
	out := make([]string, 0, h)
	for i := m.scroll; i < len(lines) && len(out) < h; i++ {
		out = append(out, fitLine(lines[i], m.width))
	}
	for len(out) < h {
		out = append(out, "")
	}
	return strings.Join(out, "\n")
}

func (m *Model) helpLines() []string {
	out := []string{"Keys (rebind in [tui.keys] of the config):", ""}
	out = append(out, m.km.HelpLines(m.opts.ReadOnly)...)
	out = append(out, "", "Sort keys of this view:")
	var ks []string
	for _, c := range m.table().Columns() {
		if c.SortKey != "" {
			ks = append(ks, c.SortKey+"="+c.Title)
		}
	}
	out = append(out, "  "+strings.Join(ks, "  "))
	out = append(out, "", "Logs view: "+m.km.Key("bottom")+" follows the end, scrolling stops following.")
	if m.opts.ReadOnly {
		out = append(out, "", "Read-only: verbs are disabled.")
		if m.opts.ReadOnlyReason != "" {
			out = append(out, "  ("+m.opts.ReadOnlyReason+")")
		}
	}
	return out
}

func tf(t interface {
	IsZero() bool
	Format(string) string
}) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05")
}

func (m *Model) detailLines() []string {
	if m.snap == nil {
		return []string{"loading…"}
	}
	var out []string
	// Every value shown is escaped (termsafe): names, commands, env and
	// reasons come from users and programs.
	add := func(k, v string) { out = append(out, fmt.Sprintf("%-14s %s", k+":", termsafe.Escape(v))) }
	switch m.detailView {
	case vInstances:
		var v *worker.InstanceView
		for i := range m.snap.Instances {
			if instanceID(&m.snap.Instances[i], i) == m.detailID {
				v = &m.snap.Instances[i]
			}
		}
		if v == nil {
			return []string{"instance " + m.detailID + " is gone"}
		}
		out = append(out, "Instance "+m.detailID, "")
		add("type", v.Type+" ("+v.ProviderType+")")
		add("state", string(v.State))
		add("idle behavior", string(v.IdleBehavior))
		add("address", v.Address)
		add("price", strconv.FormatFloat(v.Price, 'f', 4, 64)+" /h")
		add("appeared", tf(v.AppearedAt))
		add("last probe", tf(v.LastProbe))
		add("last busy", tf(v.LastBusy))
		add("last ctr", v.LastContainer)
		if !v.UnreachableSince.IsZero() {
			add("reachable", "NO, "+unreachableText(v)+" (for "+fmtAge(m.now().Sub(v.UnreachableSince))+")")
		} else {
			add("last error", or(v.LastError, "-"))
		}
		out = append(out, "", fmt.Sprintf("Containers (%d):", len(v.Containers)))
		for _, c := range v.Containers {
			out = append(out, "  "+c)
		}
	case vContainers:
		c := m.container(m.detailID)
		if c == nil {
			return []string{"container " + m.detailID + " is gone"}
		}
		out = append(out, "Container "+c.ID+"  "+termsafe.Escape(c.Name), "")
		add("state", containerState(c))
		add("priority", strconv.Itoa(c.Priority))
		add("command", strings.Join(c.Command, " "))
		if c.Image != "" {
			add("image", c.Image)
		}
		rc := c.RuntimeConstraints
		add("needs", fmt.Sprintf("%d vCPU, %s RAM, %s scratch, %d GPU", rc.VCPUs, fmtBytes(rc.RAM), fmtBytes(rc.Scratch), rc.GPUs))
		add("attempts", fmt.Sprintf("%d of %d (restart %s)", c.Attempts, c.MaxAttempts, or(c.RestartPolicy, "never")))
		add("instance", or(c.InstanceID, "-")+" "+c.InstanceType)
		label := "pending"
		if c.State.Final() {
			label = "reason"
		}
		r := c.Reason
		if c.ReasonCode != "" {
			r += " [" + string(c.ReasonCode) + "]"
		}
		add(label, or(r, "-"))
		if c.ExitCode != nil {
			add("exit code", strconv.Itoa(*c.ExitCode))
		}
		if c.LogsError != "" {
			add("output", c.LogsError)
		}
		add("created", tf(c.CreatedAt))
		add("started", tf(c.StartedAt))
		add("finished", tf(c.FinishedAt))
		envs := make([]string, 0, len(c.Env))
		for k := range c.Env {
			envs = append(envs, k+"="+c.Env[k])
		}
		slices.Sort(envs)
		if len(envs) > 0 {
			add("env", strings.Join(envs, " "))
		}
		labels := make([]string, 0)
		for k, v := range c.Scheduling.Labels {
			labels = append(labels, k+"="+v)
		}
		slices.SortFunc(labels, cmp.Compare[string])
		if len(labels) > 0 {
			add("labels", strings.Join(labels, " "))
		}
		if c.Scheduling.Supervisor {
			add("supervisor", "yes (at most supervisor_fraction of the instances)")
		}
		out = append(out, "", "Log tail:")
		switch {
		case m.detailLogs != "":
		case c.State.Final():
			out = append(out, "  (no output)")
		default:
			out = append(out, "  (none yet)")
		}
		for _, l := range termsafe.Lines(strings.TrimRight(m.detailLogs, "\n")) {
			if l != "" {
				out = append(out, "  "+l)
			}
		}
	default:
		row, ok := m.tables[m.detailView].Row(m.detailID)
		if !ok {
			return []string{m.detailID + " is gone"}
		}
		for i, c := range m.tables[m.detailView].Columns() {
			add(strings.ToLower(c.Title), row.Cells[i])
		}
	}
	return out
}

func unreachableCount(vs []worker.InstanceView) int {
	n := 0
	for i := range vs {
		if !vs[i].UnreachableSince.IsZero() && vs[i].State != worker.StateShutdown {
			n++
		}
	}
	return n
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
