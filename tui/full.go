// A container as the console reads it: its compact row (tables, verbs,
// counts) and, for its details and YAML, its full record — the
// snapshot's when the backend sends full records, else one fetched by id
// when the screen opens and again at each refresh while it is shown.

package tui

import (
	tea "charm.land/bubbletea/v2"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

// fullRecord is the fetched full record of one container.
type fullRecord struct {
	id   string
	c    view.Container
	err  error // the last fetch's; nil once one succeeded and none failed since
	have bool  // c is a record of id
	busy bool  // a fetch is in flight
	gen  uint64
}

type fullMsg struct {
	gen uint64
	id  string
	c   view.Container
	err error
}

// row returns the snapshot's row of a container (nil if it has none).
func (m *Model) row(id string) *backend.Row {
	if r, ok := m.ctrs.Get(id); ok {
		return &r
	}
	return nil
}

// container returns a container's full record: the snapshot's, or the
// one fetched for the details or YAML shown (nil when there is none yet).
func (m *Model) container(id string) *view.Container {
	if m.snap == nil {
		return nil
	}
	if m.snap.Containers == nil {
		if m.full.id == id && m.full.have {
			return &m.full.c
		}
		return nil
	}
	if m.ctrIdx == nil {
		m.ctrIdx = make(map[string]int32, len(m.snap.Containers))
		for i := range m.snap.Containers {
			m.ctrIdx[m.snap.Containers[i].ID] = int32(i)
		}
	}
	if i, ok := m.ctrIdx[id]; ok {
		return &m.snap.Containers[i]
	}
	return nil
}

// fullShown is the container whose full record the screen shows ("" for none).
func (m *Model) fullShown() string {
	switch md := m.screenMode(); {
	case md == modeDetails && m.detailView == vContainers:
		return m.detailID
	case md == modeYaml && m.yamlView == vContainers:
		return m.yamlID
	}
	return ""
}

// fetchFull reads the record of the container shown, when the snapshot
// has no full records and no read of it is in flight.
func (m *Model) fetchFull() tea.Cmd {
	id := m.fullShown()
	if id == "" || m.snap == nil || m.snap.Containers != nil {
		return nil
	}
	if m.full.id != id {
		m.full = fullRecord{id: id, gen: m.full.gen}
	}
	if m.full.busy {
		return nil
	}
	m.full.busy = true
	m.full.gen++
	gen, be, ctx := m.full.gen, m.be, m.ctx
	return func() tea.Msg {
		c, err := be.Container(ctx, id)
		return fullMsg{gen: gen, id: id, c: c, err: err}
	}
}

func (m *Model) onFull(msg fullMsg) {
	if msg.gen != m.full.gen || msg.id != m.full.id {
		return
	}
	m.full.busy, m.full.err = false, msg.err
	if msg.err == nil {
		m.full.c, m.full.have = msg.c, true
	} else if view.KindOf(msg.err) == view.KindNotFound {
		m.full.have = false // dropped: the details say it is gone
	}
	m.syncScreen()
}

// fullMissing says why a container's record is not shown yet: "" when it
// is gone (no row, or the daemon no longer has it).
func (m *Model) fullMissing(id string) string {
	if m.row(id) == nil || (m.full.id == id && view.KindOf(m.full.err) == view.KindNotFound) {
		return ""
	}
	if m.full.id == id && m.full.err != nil {
		return "cannot read its record: " + m.full.err.Error() + " (retried at the next refresh)"
	}
	return "reading its record…"
}

// batch is tea.Batch that stays nil when every command is.
func batch(cmds ...tea.Cmd) tea.Cmd {
	var keep []tea.Cmd
	for _, c := range cmds {
		if c != nil {
			keep = append(keep, c)
		}
	}
	switch len(keep) {
	case 0:
		return nil
	case 1:
		return keep[0]
	}
	return tea.Batch(keep...)
}
