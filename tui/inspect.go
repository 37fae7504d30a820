// Drilling into details, failures and events; copying ids.

package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/keys"
)

// Drill-down between details, the explanation of aged-out events, the
// failure count of the header and copying ids: what an operator reaches
// for when looking into a failure.

// inspectState is the model's state for these.
type inspectState struct {
	// sel is the container row selected in an instance's details (-1:
	// none yet), for the instance selFor.
	sel    int
	selFor string
	// back holds the drill-downs taken, newest last: esc on the details
	// a step led to returns to the details it came from.
	back []drillStep
	// event is the last event shown in details: kept so that it can
	// still be explained once it ages out of the snapshot's events.
	event view.Event

	failedOf *backend.Snapshot // the snapshot the counts below are of
	failed   int
	// listed counts the containers of the snapshot's list by state: the
	// header shows these, so that they agree with the table.
	listed      map[view.State]int
	listedTotal int

	// fatal is the backend error the console exits with (Run returns it).
	fatal error
}

type detailRef struct {
	view viewID
	id   string
}

type drillStep struct{ from, to detailRef }

// failedCount returns how many containers of the snapshot ended with a
// non-zero exit (counted once per snapshot).
func (m *Model) failedCount() int {
	m.countList()
	return m.insp.failed
}

// countList counts the snapshot's containers by state, and the failed
// ones, once per snapshot.
func (m *Model) countList() {
	if m.snap == nil || m.insp.failedOf == m.snap {
		return
	}
	by, total, n := m.ctrs.Counts()
	m.insp.failedOf, m.insp.failed = m.snap, n
	m.insp.listed, m.insp.listedTotal = by, total
}

// detailKey handles the keys of the details view that are not scrolling:
// in an instance's details, up/down select one of its containers and
// enter opens it; in a container's details, enter opens its instance; in
// an event's, enter opens its target. Back returns to the details shown
// before a drill-down. ok is false when the key is not one of these.
func (m *Model) detailKey(act string) (cmd tea.Cmd, ok bool) {
	ctrs := m.detailContainers()
	switch act {
	case keys.Up, keys.Down:
		if len(ctrs) == 0 {
			return nil, false
		}
		d := 1
		if act == keys.Up {
			d = -1
		}
		next := m.insp.sel + d
		if next < 0 || next >= len(ctrs) {
			return nil, false // past the first or last: scroll the text
		}
		m.insp.sel = next
		m.keepSelectionShown()
		return nil, true
	case keys.Back:
		here := detailRef{m.detailView, m.detailID}
		if n := len(m.insp.back); n > 0 && m.insp.back[n-1].to == here {
			from := m.insp.back[n-1].from
			m.insp.back = m.insp.back[:n-1]
			m.openDetails(from.view, from.id)
			return m.fetchLogs(), true
		}
		m.insp.back = m.insp.back[:0] // details opened afresh from a table
		return nil, false
	case keys.Details:
		var to detailRef
		switch m.detailView {
		case vInstances:
			if len(ctrs) == 0 {
				return m.setFlash("no containers on "+m.detailID, true), true
			}
			to = detailRef{vContainers, ctrs[min(max(m.insp.sel, 0), len(ctrs)-1)]}
		case vContainers:
			c := m.row(m.detailID)
			if c == nil || c.InstanceID == "" {
				return m.setFlash(m.detailID+" is on no instance", true), true
			}
			to = detailRef{vInstances, c.InstanceID}
		case vEvents:
			e := m.insp.event
			if strconv.FormatUint(e.Seq, 10) != m.detailID {
				return m.setFlash("event #"+m.detailID+" has aged out: its target is not known here", true), true
			}
			tv, ok := m.targetView(e.Target)
			if !ok {
				return m.setFlash(targetGone(e.Target), true), true
			}
			to = detailRef{tv, e.Target}
		default:
			return nil, true
		}
		m.insp.back = append(m.insp.back, drillStep{from: detailRef{m.detailView, m.detailID}, to: to})
		m.openDetails(to.view, to.id)
		return m.fetchLogs(), true
	}
	return nil, false
}

// openDetails shows the details of id in view v, with the table's cursor
// on it (so that esc to the table lands there).
func (m *Model) openDetails(v viewID, id string) {
	m.detailView, m.detailID, m.detailLogs = v, id, ""
	m.logBusy = false
	m.tables[v].SetCursor(id)
	m.openScreen(modeDetails)
}

// targetView tells which view an event's target belongs to.
func (m *Model) targetView(target string) (viewID, bool) {
	if m.snap == nil || target == "" {
		return 0, false
	}
	if m.row(target) != nil {
		return vContainers, true
	}
	for i := range m.snap.Instances {
		if string(m.snap.Instances[i].ID) == target {
			return vInstances, true
		}
	}
	return 0, false
}

// detailContainers returns the containers of the instance whose details
// are shown (nil otherwise), resetting the selection for a new instance.
func (m *Model) detailContainers() []string {
	if m.mode != modeDetails || m.detailView != vInstances || m.snap == nil {
		return nil
	}
	if m.insp.selFor != m.detailID {
		m.insp.selFor, m.insp.sel = m.detailID, 0
	}
	for i := range m.snap.Instances {
		if instanceID(&m.snap.Instances[i], i) == m.detailID {
			return m.snap.Instances[i].Containers
		}
	}
	return nil
}

// keepSelectionShown scrolls the details so that the selected container's
// line is in view.
func (m *Model) keepSelectionShown() {
	lines := m.detailLines()
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(l, selMark) {
			at = i
		}
	}
	if at < 0 {
		return
	}
	m.syncScreen() // the selection mark moved
	h, y := m.vp.Height(), m.vp.YOffset()
	if at < y {
		m.vp.SetYOffset(at)
	} else if at >= y+h {
		m.vp.SetYOffset(at - h + 1)
	}
}

// selMark starts the selected container's line in an instance's details.
const selMark = "> "

// copyID copies the full id under the cursor (or of the details shown; of
// an event, its target) to the terminal's clipboard with OSC 52.
func (m *Model) copyID() tea.Cmd {
	id := m.table().Cursor()
	v := m.view
	if m.mode == modeDetails {
		id, v = m.detailID, m.detailView
		if v == vInstances {
			if ctrs := m.detailContainers(); len(ctrs) > 0 {
				id = ctrs[min(max(m.insp.sel, 0), len(ctrs)-1)]
			}
		}
	}
	if v == vEvents {
		if row, ok := m.tables[vEvents].Row(id); ok {
			id = row.Cells[eventTargetCol]
		}
	}
	if id == "" {
		return m.setFlash("copy: no row selected", true)
	}
	return tea.Batch(tea.SetClipboard(id), m.setFlash("copied "+id+" (OSC 52: the terminal must allow it)", false))
}

// eventTargetCol is the TARGET column of the events view.
const eventTargetCol = 4

// eventBySeq finds an event of the snapshot by its sequence number.
func (m *Model) eventBySeq(seq string) (view.Event, bool) {
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || m.snap == nil {
		return view.Event{}, false
	}
	evs := m.snap.Events
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Seq == n {
			return evs[i], true
		}
	}
	return view.Event{}, false
}

// eventLines shows one event in full, or explains that it aged out of
// the event ring the console reads (what it was, when it was seen).
func (m *Model) eventLines(d *detailText) []string {
	e, ok := m.eventBySeq(m.detailID)
	if ok {
		m.insp.event = e
	}
	if !ok {
		kept, oldest := 0, ""
		if m.snap != nil {
			kept = len(m.snap.Events)
			if kept > 0 {
				oldest = " (the oldest kept is #" + strconv.FormatUint(m.snap.Events[0].Seq, 10) + ")"
			}
		}
		d.line("Event #"+m.detailID+" has aged out of the event ring:",
			"the console keeps the newest "+strconv.Itoa(kept)+" events"+oldest+";",
			"`dispatch-tui ls events` and the daemon's log keep the full history.")
		if strconv.FormatUint(m.insp.event.Seq, 10) != m.detailID {
			// Not shown before it aged out: the table may still hold
			// its row from an earlier refresh.
			if row, ok := m.tables[vEvents].Row(m.detailID); ok {
				d.line("", "It was:")
				for i, c := range m.tables[vEvents].Columns() {
					d.kv(strings.ToLower(c.Title), row.Cells[i])
				}
			}
			return d.lines
		}
		d.line("", "It was:")
		e = m.insp.event
	} else {
		d.line("Event #"+m.detailID, "")
	}
	d.kv("time", tf(e.Time))
	d.kv("actor", e.Actor)
	d.kv("kind", e.Kind)
	d.kv("target", e.Target)
	d.kv("action", e.Action)
	d.kv("reason", or(e.Reason, "-"))
	if _, ok := m.targetView(e.Target); ok {
		d.line("", "enter: open "+e.Target)
	} else {
		d.line("", targetGone(e.Target))
	}
	return d.lines
}

// targetGone says why an event's target cannot be opened: an instance or
// container no longer listed, or something that has no details (the
// scheduler, the store).
func targetGone(target string) string {
	switch target {
	case "", "scheduler", "store":
		return "this event is about " + or(target, "nothing in particular") + ", which has no details view"
	}
	return termsafe.Escape(target) + " is gone: no instance or container of that id is listed now (destroyed, or its record dropped)"
}
