// Rendering the screen: header, tabs, table, overlays, details.

package tui

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/keys"
	"dispatch-tui/tui/table"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

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

var instanceOrder = []view.InstanceState{view.InstanceRunning, view.InstanceIdle, view.InstanceBooting, view.InstanceUnknown, view.InstanceShutdown, view.InstanceRefused, view.InstanceForeign}

func (m *Model) header() []string {
	w := m.width
	var flags []string
	if m.opts.ReadOnly {
		flags = append(flags, "RO")
	}
	var l1, l2, l3, l4 string
	l1 = "dispatch-tui  " + m.be.Describe()
	store := "" // the daemon's store cannot write: say so until it can
	if s := m.snap; s != nil {
		if c := clusterHeader(s.Cluster, m.now()); c != "" {
			l1 += "  " + c
		}
		sum := s.Summary
		if store = sum.StoreStatus(); store != "" {
			flags = append(flags, "STORE DOWN")
		}
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
			if st != view.InstanceShutdown {
				live += n
			}
		}
		for _, n := range sum.Containers {
			nc += n
		}
		// The counts of the list the table shows: a summary newer than
		// the list (a paced remote read) would disagree with the table.
		m.countList()
		byState, listNote := m.insp.listed, ""
		if s.ListedAt.Before(s.TakenAt) && nc != m.insp.listedTotal {
			listNote = fmt.Sprintf(" (list of %s; %d now)", s.ListedAt.Format("15:04:05"), nc)
		}
		nc = m.insp.listedTotal
		l2 = fmt.Sprintf("instances %d: %s", ni, counts(sum.Instances, instanceOrder))
		if n := unreachableCount(s.Instances); n > 0 {
			l2 += fmt.Sprintf("  UNREACHABLE %d", n)
		}
		failedPart := ""
		if n := m.failedCount(); n > 0 {
			// Ahead of the per-state counts: a narrow terminal cuts
			// the end of the line.
			failedPart = fmt.Sprintf(", FAILED %d", n)
		}
		l3 = fmt.Sprintf("containers %d%s%s: %s", nc, listNote, failedPart, counts(byState, view.States[:]))
		quota := "quota " + strconv.Itoa(live) + "/"
		if sum.QuotaLimit > 0 {
			quota += strconv.Itoa(sum.QuotaLimit)
		} else {
			quota += "∞"
		}
		depth := sum.Containers[view.Queued] + sum.Containers[view.Locked]
		sw := 20
		if w < 100 {
			sw = 10
		}
		// One bar a second, scaled from zero to the range shown.
		l4 = fmt.Sprintf("$/h %.2f  %s  queue %d %s %s  $/h %s %s", sum.PricePerHour, quota,
			depth, m.queueSpark.spark(sw), m.queueSpark.scale(sw, fmtCount),
			m.costSpark.spark(sw), m.costSpark.scale(sw, fmtPrice))
	} else {
		l2 = m.loadingText()
	}
	if m.snapErr != nil {
		// The back-off here too: the flash line, which says more, may
		// be showing the result of a key instead.
		stale := "STALE"
		var re *backend.RetryError
		if errors.As(m.snapErr, &re) {
			stale += ", retry in " + max(re.At.Sub(m.now()), 0).Round(time.Second).String()
		}
		flags = append(flags, stale)
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
		out = append(out, m.th.FlashErr.Render(fitLine(m.disconnected(), w)))
	case store != "" && m.flash == "":
		out = append(out, m.th.FlashErr.Render(fitLine(termsafe.Escape(store), w)))
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
	if m.snap == nil {
		info = "  " + m.loadingText() // not "0/0": nothing is known yet
	}
	if w := m.working(); w != "" {
		// The rows and count shown are the previous ones until the
		// result lands.
		info += " " + m.spin.View() + " " + w + "…"
	}
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
		return tooSmall(m.width, m.height)
	}
	var b strings.Builder
	b.Grow(m.width * m.height * 2)
	head := m.header()
	for _, l := range head {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	var body string
	switch m.screenMode() {
	case modeHelp, modeDetails, modeLogs, modeYaml, modeCost:
		body = m.vp.View()
	default:
		body = m.table().View()
	}
	if m.dlg != nil {
		// The dialog may cover the header too, never the footer: its
		// buttons always show.
		above := b.String()
		b.Reset()
		screen := above + body
		box := m.dlg.View(m.th, m.width, m.height-1)
		b.WriteString(overlay(screen, box, m.width, m.height-1, len(head)))
	} else {
		b.WriteString(body)
	}
	b.WriteByte('\n')
	b.WriteString(m.footer())
	return b.String()
}

// overlay replaces screen lines with the dialog's: centred below the
// first skip lines when it fits there, else higher.
func overlay(body, box string, w, h, skip int) string {
	lines := strings.Split(body, "\n")
	for len(lines) < h {
		lines = append(lines, "")
	}
	bl := strings.Split(box, "\n")
	top := skip + max((h-skip-len(bl))/2, 0)
	if top+len(bl) > h {
		top = max(h-len(bl), 0)
	}
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

func tf(t interface {
	IsZero() bool
	Format(string) string
}) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05")
}

// detailText builds the lines of a details view. Values are escaped
// (termsafe: names, commands, env and reasons come from users and
// programs) and wrapped, never cut: a last error is read in full.
type detailText struct {
	lines []string
	width int
}

const detailKeyWidth = 14

func (d *detailText) line(s ...string) { d.lines = append(d.lines, s...) }

// kv adds "key: value", wrapping the value under itself.
func (d *detailText) kv(k, v string) {
	v = termsafe.Escape(v)
	room := max(d.width-detailKeyWidth-1, 20)
	first := true
	for _, part := range wrap(v, room) {
		if first {
			d.lines = append(d.lines, fmt.Sprintf("%-*s %s", detailKeyWidth, k+":", part))
			first = false
			continue
		}
		d.lines = append(d.lines, strings.Repeat(" ", detailKeyWidth+1)+part)
	}
}

// wrap splits s into pieces of at most w cells, at spaces when it can.
func wrap(s string, w int) []string {
	if ansi.StringWidth(s) <= w {
		return []string{s}
	}
	var out []string
	for _, l := range strings.Split(ansi.Wordwrap(s, w, " /,;:"), "\n") {
		// Words longer than w (ids, paths) are cut hard.
		out = append(out, strings.Split(ansi.Hardwrap(l, w, true), "\n")...)
	}
	return out
}

func (m *Model) detailLines() []string {
	if m.snap == nil {
		return []string{"loading…"}
	}
	d := &detailText{width: m.width}
	add := d.kv
	switch m.detailView {
	case vInstances:
		var v *view.Instance
		for i := range m.snap.Instances {
			if instanceID(&m.snap.Instances[i], i) == m.detailID {
				v = &m.snap.Instances[i]
			}
		}
		if v == nil {
			return []string{"instance " + m.detailID + " is gone (destroyed, or no longer listed by the cloud)"}
		}
		now := m.now()
		d.line("Instance "+m.detailID, "")
		add("type", v.Type+" ("+v.ProviderType+")")
		add("state", string(v.State))
		add("idle behavior", string(v.IdleBehavior))
		add("address", v.Address)
		add("price", strconv.FormatFloat(v.Price, 'f', 4, 64)+" /h")
		add("cost", m.instanceCostLine(string(v.ID)))
		if c := v.Created(); !c.IsZero() {
			add("created", tf(c)+" ("+fmtAge(now.Sub(c))+" ago)")
		}
		add("appeared", tf(v.AppearedAt))
		add("last probe", tf(v.LastProbe))
		add("last busy", tf(v.LastBusy))
		add("last ctr", or(v.LastContainer, "-"))
		probeErr, shown := or(v.ProbeError, v.LastError), ""
		switch {
		case !v.UnreachableSince.IsZero():
			add("reachable", "NO, unreachable for "+fmtAge(now.Sub(v.UnreachableSince))+
				" (since "+v.UnreachableSince.Format("15:04:05")+")")
			add("probe error", probeErr)
			shown = probeErr
		case v.State == view.InstanceBooting && v.ProbeFailing:
			// Not an error yet: a host takes a while to answer.
			add("boot probe", probeErr+" (retried until timeout_booting)")
			shown = probeErr
		case v.ProbeFailing:
			add("probe error", probeErr)
			shown = probeErr
		}
		if v.LastError != shown || shown == "" {
			add("last error", or(v.LastError, "-"))
		}
		ctrs := m.detailContainers()
		d.line("", fmt.Sprintf("Containers (%d):", len(v.Containers)))
		for i, id := range ctrs {
			mark := "  "
			if i == m.insp.sel {
				mark = selMark
			}
			what := ""
			if c := m.row(id); c != nil {
				what = "  " + containerState(c) + "  " + c.Name
			}
			d.line(mark + id + termsafe.Escape(what))
		}
		if len(ctrs) > 0 {
			d.line("  (↑↓ select, " + m.km.Key(keys.Details) + " or enter opens, " + m.km.Key(keys.Copy) + " copies the id)")
		}
		m.instanceEvents(d, string(v.ID))
	case vContainers:
		c := m.container(m.detailID)
		if c == nil {
			if why := m.fullMissing(m.detailID); why != "" {
				return []string{"Container " + m.detailID, "", "(" + why + ")"}
			}
			return []string{"container " + m.detailID + " is gone (its record was dropped)"}
		}
		d.line("Container "+c.ID+"  "+termsafe.Escape(c.Name), "")
		row := backend.RowOf(c, nil)
		add("state", containerState(&row))
		if row.Failed() {
			add("FAILED", "exit code "+strconv.Itoa(*c.ExitCode))
		}
		add("priority", strconv.Itoa(c.Priority))
		add("command", strings.Join(c.Command, " "))
		if c.Image != "" {
			add("image", c.Image)
		}
		rc := c.RuntimeConstraints
		add("needs", fmt.Sprintf("%d vCPU, %s RAM, %s scratch, %d GPU", rc.VCPUs, fmtBytes(rc.RAM), fmtBytes(rc.Scratch), rc.GPUs))
		add("attempts", fmt.Sprintf("%d of %d (restart %s)", c.Attempts, c.MaxAttempts, or(c.RestartPolicy, "never")))
		on := or(c.InstanceID, "-") + " " + c.InstanceType
		if c.InstanceID != "" {
			on += "  (enter opens it)"
		}
		add("instance", on)
		add("cost", m.containerCostLine(c.ID))
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
		if c.LogsTruncated != 0 {
			add("output", view.TruncatedText(c.LogsTruncated))
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
		schedulingLines(d, c)
		d.line("", "Log tail:")
		switch {
		case m.detailLogs != "":
		case c.State.Final():
			d.line("  (no output)")
		default:
			d.line("  (none yet)")
		}
		for _, l := range termsafe.Lines(strings.TrimRight(m.detailLogs, "\n")) {
			if l != "" {
				d.line("  " + l)
			}
		}
	case vEvents:
		return m.eventLines(d)
	default:
		row, ok := m.tables[m.detailView].Row(m.detailID)
		if !ok {
			return []string{m.detailID + " is gone"}
		}
		for i, c := range m.tables[m.detailView].Columns() {
			add(strings.ToLower(c.Title), row.Cells[i])
		}
	}
	return d.lines
}

// instanceEvents lists the newest events about an instance (its probe
// errors, state changes, cloud errors).
func (m *Model) instanceEvents(d *detailText, id string) {
	const most = 8
	var evs []view.Event
	for i := len(m.snap.Events) - 1; i >= 0 && len(evs) < most; i-- {
		if m.snap.Events[i].Target == id {
			evs = append(evs, m.snap.Events[i])
		}
	}
	if len(evs) == 0 {
		return
	}
	d.line("", "Recent events (newest first):")
	for _, e := range evs {
		d.kv("  "+e.Time.Format("15:04:05"), e.Kind+" "+e.Action+" "+e.Reason)
	}
}

// schedulingLines shows a container's scheduling fields and its health
// check with the runner's last word on it.
func schedulingLines(d *detailText, c *view.Container) {
	for _, kv := range []struct {
		name string
		m    map[string]string
	}{{"labels", c.Labels}, {"constraints", c.Scheduling.Constraints}} {
		pairs := make([]string, 0, len(kv.m))
		for k, v := range kv.m {
			pairs = append(pairs, k+"="+v)
		}
		slices.SortFunc(pairs, cmp.Compare[string])
		d.kv(kv.name, or(strings.Join(pairs, " "), "-"))
	}
	d.kv("preemptible", yesNo(c.Scheduling.IsPreemptible()))
	if c.Scheduling.Supervisor {
		d.kv("supervisor", "yes (at most supervisor_fraction of the instances at once)")
	}
	if c.Scheduling.MaxRunTime > 0 {
		d.kv("max run time", time.Duration(c.Scheduling.MaxRunTime).String())
	}
	if hc := c.HealthCheck; hc != nil {
		d.kv("health check", healthCheckText(hc.Command, time.Duration(hc.Interval),
			time.Duration(hc.Timeout), hc.Retries, healthStatus(c.Health)))
		if h := c.Health; h != nil && h.LastOutput != "" {
			d.kv("health output", h.LastOutput)
		}
	}
}

// healthStatus is the runner's health report in a few words:
// "unhealthy, 3 failures, last: exit status 1".
func healthStatus(h *view.Health) string {
	if h == nil {
		return ""
	}
	s := h.State
	if h.Failures > 0 {
		s += ", " + strconv.Itoa(h.Failures) + " failures"
	}
	if h.LastResult != "" {
		s += ", last: " + h.LastResult
	}
	if h.Killed {
		s += " (killed for it)"
	}
	return s
}

// healthCheckText renders a container's health check and its state:
// "curl -fs localhost:8080/health  every 10s, timeout 2s, 3 retries: healthy".
func healthCheckText(command []string, interval, timeout time.Duration, retries int, status string) string {
	s := strings.Join(command, " ")
	var how []string
	if interval > 0 {
		how = append(how, "every "+interval.String())
	}
	if timeout > 0 {
		how = append(how, "timeout "+timeout.String())
	}
	if retries > 0 {
		how = append(how, strconv.Itoa(retries)+" retries")
	}
	if len(how) > 0 {
		s += "  " + strings.Join(how, ", ")
	}
	return s + ": " + or(status, "not checked yet")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func unreachableCount(vs []view.Instance) int {
	n := 0
	for i := range vs {
		if !vs[i].UnreachableSince.IsZero() && vs[i].State != view.InstanceShutdown {
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

// disconnected says why the console shows stale data and, when the
// backend backs off, when it tries again.
func (m *Model) disconnected() string {
	var re *backend.RetryError
	if errors.As(m.snapErr, &re) {
		wait := max(re.At.Sub(m.now()), 0).Round(time.Second)
		// The back-off first: a long error is what the width cuts.
		return fmt.Sprintf("disconnected — retrying in %s (attempt %d); verbs are off: %s", wait, re.Attempt, reachError(re.Err))
	}
	return "snapshot: " + reachError(m.snapErr)
}
