// Verbs: their targets, the confirming dialog, sending them, reading the outcome.

package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/dialog"
	"dispatch-tui/tui/keys"
)

// Verbs: choosing their targets, confirming them in a dialog, sending
// them to the backend, and reading back their outcome.

func (m *Model) onVerb(msg verbMsg) tea.Cmd {
	clearGen := m.fetchGen + 1
	ok := 0
	var firstErr error
	var firstID string
	for _, id := range msg.ids {
		if err, bad := msg.failed[id]; bad {
			delete(m.pending, id)
			for _, t := range m.tables {
				t.SetPending(id, false)
			}
			if t := m.tables[msg.view]; t != nil && len(msg.ids) > 1 {
				t.Mark(id) // only the failures stay marked, for another try
			}
			if firstErr == nil {
				firstErr, firstID = err, id
			}
			continue
		}
		ok++
		if _, p := m.pending[id]; p {
			m.pending[id] = clearGen
		}
	}
	var flash tea.Cmd
	what := msg.action
	if len(msg.ids) == 1 {
		what += ": " + msg.ids[0]
	} else if len(msg.ids) > 1 {
		what += ": " + plural(len(msg.ids), kindOf(msg.view), kindOf(msg.view)+"s")
	}
	switch {
	case firstErr == nil:
		flash = m.setFlash("ok: "+what, false)
	case ok == 0 && len(msg.ids) <= 1:
		flash = m.setFlash("error: "+what+": "+firstErr.Error(), true)
	default:
		flash = m.setFlash(fmt.Sprintf("error: %s: %d ok, %d failed; %s: %v", what, ok, len(msg.failed), firstID, firstErr), true)
	}
	return tea.Batch(flash, m.startFetch())
}

// verb prepares an instance or container verb: the targets are the marked
// rows, or the cursor row. Destructive and bulk verbs open a dialog.
func (m *Model) verb(act string) tea.Cmd {
	v := m.view
	if m.mode == modeDetails {
		v = m.detailView
	}
	if v != vInstances && v != vContainers {
		return m.notHere(act)
	}
	if m.snapErr != nil { // the rows are stale: a verb would act on a guess
		return m.setFlash(act+": not connected ("+m.snapErr.Error()+")", true)
	}
	t := m.tables[v]
	// Verbs act on the marked rows the filter shows; the dialog says how
	// many marked rows it hides and leaves alone.
	ids, hidden := t.MarkedShown()
	if len(ids) == 0 && hidden > 0 {
		return m.setFlash(fmt.Sprintf("%s: the %s hidden by the filter (esc clears it)", act, plural(hidden, "marked row is", "marked rows are")), true)
	}
	if len(ids) == 0 {
		if m.mode == modeDetails {
			ids = []string{m.detailID}
		} else if id := t.Cursor(); id != "" {
			ids = []string{id}
		}
	}
	if len(ids) == 0 {
		return m.notHere(act, "no row selected")
	}
	allHeld := v == vContainers && act == keys.Hold
	for _, id := range ids {
		if c := m.row(id); allHeld && (c == nil || !c.Held) {
			allHeld = false
		}
	}
	verb, ok := choose(act, v, allHeld)
	if !ok {
		return nil
	}
	pv := &pendingVerb{action: verb.label(), view: v}
	kind := kindOf(v)
	var toZero []string // containers this verb drops to priority 0
	switch {
	case verb.ctr != view.ContainerPriority:
		for _, id := range ids {
			pv.targets = append(pv.targets, verbTarget{id: id, inst: verb.inst, ctr: verb.ctr})
		}
	default:
		d := verb.step
		if len(ids) == 1 {
			if c := m.row(ids[0]); c != nil {
				// One row: the flash says the change itself.
				pv.action = fmt.Sprintf("priority %d → %d", int(c.Priority), int(c.Priority)+d)
			}
		}
		atZero := 0
		for _, id := range ids {
			c := m.row(id)
			if c == nil {
				continue
			}
			if int(c.Priority)+d < 0 {
				atZero++ // already 0: nothing to lower
				continue
			}
			if int(c.Priority)+d == 0 {
				toZero = append(toZero, id)
			}
			pv.targets = append(pv.targets, verbTarget{id: id, ctr: verb.ctr, prio: int(c.Priority) + d})
		}
		if len(pv.targets) == 0 && atZero > 0 {
			if atZero == 1 {
				return m.setFlash("priority: "+ids[0]+" is already 0, the lowest (never scheduled)", true)
			}
			return m.setFlash(fmt.Sprintf("priority: all %d are already 0, the lowest", atZero), true)
		}
	}
	if len(pv.targets) == 0 {
		return nil
	}
	n := len(pv.targets)
	ids = ids[:0:0]
	for _, tg := range pv.targets {
		ids = append(ids, tg.id)
	}
	var hiddenNote []string
	if hidden > 0 {
		hiddenNote = []string{plural(hidden, "more marked "+kind+" is", "more marked "+kind+"s are") + " hidden by the filter and left alone."}
	}
	button := capital(verb.label())
	if verb.ctr == view.ContainerPriority {
		button, _, _ = strings.Cut(button, " ") // "Raise", "Lower"
	}
	switch {
	case act == keys.Kill && n == 1:
		m.dlg = dialog.New(title(verb, 1, ids[0]), "Kill", ids[0], append([]string{explain(verb, 1, ids[0])}, hiddenNote...)...)
	case n > 1:
		// The notes first: a long id list is what is cut when the
		// screen is short.
		body := []string{explain(verb, n, "")}
		if len(toZero) > 0 {
			body = append(body, plural(len(toZero), "of them drops", "of them drop")+" to priority 0. "+prioZeroNote)
		}
		body = append(body, hiddenNote...)
		body = append(body, strings.Join(ids, " "))
		m.dlg = dialog.New(title(verb, n, ""), button, strconv.Itoa(n), body...)
	case len(toZero) == 1:
		m.dlg = dialog.New("Priority 0 for "+ids[0]+"?", "Set 0", "",
			append([]string{prioZeroNote}, hiddenNote...)...)
	case act == keys.Drain, act == keys.Hold && v == vInstances, hidden > 0:
		m.dlg = dialog.New(title(verb, 1, ids[0]), button, "", append([]string{explain(verb, 1, ids[0])}, hiddenNote...)...)
	default:
		return m.execute(pv)
	}
	m.dlgFor = pv
	return nil
}

// prioZeroNote says what priority 0 does, in the dialogs that ask first.
const prioZeroNote = "At priority 0 a container is never scheduled; a running one is stopped and requeued, to run again once its priority is raised."

// execute runs a confirmed verb: rows are flagged pending, and the Cmd
// captures only values.
func (m *Model) execute(pv *pendingVerb) tea.Cmd {
	if pv == nil {
		return nil
	}
	be, ctx := m.be, m.ctx
	if pv.action == "pause" || pv.action == "resume" {
		paused, action := pv.paused, pv.action
		m.inflight++
		m.inflightWhat = action
		return tea.Batch(m.armSpin(), func() tea.Msg {
			c, cancel := context.WithTimeout(ctx, verbTimeout)
			defer cancel()
			msg := verbMsg{action: action, ids: []string{"scheduler"}}
			if err := be.SetPaused(c, paused, ""); err != nil {
				msg.failed = map[string]error{"scheduler": err}
			}
			return msg
		})
	}
	m.inflight++
	m.inflightWhat = pv.action
	if len(pv.targets) == 1 {
		m.inflightWhat += " " + pv.targets[0].id
	} else if len(pv.targets) > 1 {
		m.inflightWhat += fmt.Sprintf(" (%d)", len(pv.targets))
	}
	spin := m.armSpin()
	done := &atomic.Int64{}
	m.inflightDone, m.inflightTotal = done, len(pv.targets)
	targets := append([]verbTarget(nil), pv.targets...)
	ids := make([]string, len(targets))
	for i, tg := range targets {
		ids[i] = tg.id
		m.pending[tg.id] = 0
		m.tables[pv.view].SetPending(tg.id, true)
	}
	m.tables[pv.view].ClearMarks()
	rows, action := pv.view, pv.action
	return tea.Batch(spin, func() tea.Msg {
		c, cancel := context.WithTimeout(ctx, verbTimeout)
		defer cancel()
		msg := verbMsg{action: action, view: rows, ids: ids, failed: map[string]error{}}
		if rows == vInstances {
			for _, tg := range targets {
				if err := be.InstanceVerb(c, tg.id, tg.inst, ""); err != nil {
					msg.failed[tg.id] = err
				}
			}
			return msg
		}
		// Containers in bulk: one call per verb (and priority value).
		type group struct {
			verb view.ContainerVerb
			prio int
		}
		var order []group
		byGroup := map[group][]string{}
		for _, tg := range targets {
			g := group{tg.ctr, tg.prio}
			if _, ok := byGroup[g]; !ok {
				order = append(order, g)
			}
			byGroup[g] = append(byGroup[g], tg.id)
		}
		// A request of at most api.MaxBatchItems at a time, each with its
		// own deadline, so that the footer can count them and a large
		// selection is not cut short by one deadline for all.
		for _, g := range order {
			for rest := byGroup[g]; len(rest) > 0; {
				chunk := rest[:min(len(rest), api.MaxBatchItems)]
				rest = rest[len(chunk):]
				c, cancel := context.WithTimeout(ctx, verbTimeout)
				failed, err := be.ContainersVerb(c, chunk, g.verb, g.prio, "")
				cancel()
				for id, e := range failed {
					msg.failed[id] = e
				}
				if err != nil {
					for _, id := range chunk {
						if _, ok := msg.failed[id]; !ok {
							msg.failed[id] = err
						}
					}
				}
				done.Add(int64(len(chunk)))
			}
		}
		return msg
	})
}
