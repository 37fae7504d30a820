// The table views: their columns and rows.

package tui

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
	"dispatch-tui/tui/table"
	"dispatch-tui/tui/theme"
)

// viewID names the table views, in the order of the 1–4 keys.
type viewID int

const (
	vInstances viewID = iota
	vContainers
	vTypes
	vEvents
	nViews
)

var viewNames = [nViews]string{"instances", "containers", "types", "events"}

// Columns. Sort keys are a letter of the title, its initial where it is
// free (K, G and D are taken by kill, bottom and drain where they apply:
// the keymap refuses a clash, keycheck.go).
func instanceColumns() []table.Column {
	return []table.Column{
		{Title: "ID", Width: 18, SortKey: "I", CutMiddle: true},
		{Title: "TYPE", Width: 9, SortKey: "T", Priority: 2},
		// Volatile: "unreachable 34s" counts up; a change of state is
		// still seen through the row's State.
		{Title: "STATE", Width: 15, SortKey: "S", State: true, Volatile: true},
		{Title: "IDLE", Width: 5, SortKey: "L", Priority: 1}, // the CLI's word for hold/drain/run
		{Title: "CTRS", Width: 4, SortKey: "C", Right: true, Numeric: true, Priority: 1},
		{Title: "PRICE", Width: 6, SortKey: "P", Right: true, Numeric: true, Priority: 3},
		{Title: "AGE", Width: 5, SortKey: "A", Right: true, Numeric: true, Priority: 2, Volatile: true},
		{Title: "HOST", Width: 15, SortKey: "H", Priority: 4, CutMiddle: true},
		{Title: "ERROR", Width: 10, SortKey: "E", Flex: true, Priority: 1},
	}
}

func containerColumns() []table.Column {
	return []table.Column{
		{Title: "ID", Width: 18, SortKey: "I", CutMiddle: true},
		{Title: "NAME", Width: 12, MaxWidth: 24, SortKey: "N", Priority: 3, CutMiddle: true},
		{Title: "STATE", Width: 12, SortKey: "S", State: true},
		{Title: "PRIO", Width: 5, SortKey: "P", Right: true, Numeric: true},
		{Title: "CPU", Width: 3, SortKey: "C", Right: true, Numeric: true, Priority: 2},
		{Title: "MEM", Width: 6, SortKey: "M", Right: true, Numeric: true, Priority: 2},
		// After REASON: at 60 columns why a container waits or how it
		// ended says more than where it runs.
		{Title: "ON", Width: 12, MaxWidth: 24, SortKey: "O", Priority: 2, CutMiddle: true},
		{Title: "TRIES", Width: 5, SortKey: "T", Right: true, Numeric: true, Priority: 4},
		{Title: "AGE", Width: 5, SortKey: "A", Right: true, Numeric: true, Priority: 3, Volatile: true},
		{Title: "REASON", Width: 12, SortKey: "R", Flex: true, Priority: 1},
	}
}

func typeColumns() []table.Column {
	return []table.Column{
		{Title: "NAME", Width: 10, SortKey: "N"},
		{Title: "CLOUD TYPE", Width: 12, SortKey: "C", Priority: 3},
		{Title: "VCPU", Width: 4, SortKey: "V", Right: true, Numeric: true},
		{Title: "MEM", Width: 7, SortKey: "M", Right: true, Numeric: true},
		{Title: "DISK", Width: 7, SortKey: "D", Right: true, Numeric: true, Priority: 2},
		{Title: "GPU", Width: 3, Right: true, Numeric: true, Priority: 2},
		{Title: "PRICE", Width: 7, SortKey: "P", Right: true, Numeric: true},
		{Title: "SPOT", Width: 4, SortKey: "S", Priority: 3},
		{Title: "INSTANCES", Width: 9, SortKey: "I", Right: true, Numeric: true},
		{Title: "BY STATE", Width: 12, Flex: true, Priority: 1}, // "running 5, idle 2": the state first
	}
}

func eventColumns() []table.Column {
	return []table.Column{
		{Title: "SEQ", Width: 6, SortKey: "S", Right: true, Numeric: true, Priority: 3, CutMiddle: true},
		{Title: "TIME", Width: 8, SortKey: "T"},
		{Title: "ACTOR", Width: 12, SortKey: "A", Priority: 1, CutMiddle: true},
		{Title: "KIND", Width: 11, Priority: 2},
		// TARGET and ACTION: the CLI's words (ls events).
		{Title: "TARGET", Width: 18, SortKey: "E", CutMiddle: true, Alias: "object"},
		{Title: "ACTION", Width: 15, SortKey: "C"},
		{Title: "REASON", Width: 12, SortKey: "R", Flex: true, Priority: 1},
	}
}

// fmtAge renders a duration compactly: 45s, 12m, 3h, 5d.
func fmtAge(d time.Duration) string {
	var b [24]byte
	return string(appendAge(b[:0], d))
}

// ageAlphabet is every byte an age's text holds (appendAge, and ageText's
// "-" for none).
const ageAlphabet = "-0123456789dhms"

// appendAge appends fmtAge's text of d, so that a filter reading every
// row's age makes no string of it.
func appendAge(dst []byte, d time.Duration) []byte {
	n, unit := ageUnits(d)
	return append(strconv.AppendInt(dst, n, 10), ageUnitText[unit])
}

// ageUnitText is the letters of ageUnits' units, by unit.
const ageUnitText = "smhd"

// ageUnits is what fmtAge's text of d is made of: a count n (never
// negative) of a unit, an index of ageUnitText.
func ageUnits(d time.Duration) (n int64, unit int) {
	switch {
	case d < 0:
		return 0, 0
	case d < time.Minute:
		return int64(d / time.Second), 0
	case d < time.Hour:
		return int64(d / time.Minute), 1
	case d < 48*time.Hour:
		return int64(d / time.Hour), 2
	}
	return int64(d / (24 * time.Hour)), 3
}

func age(now, t time.Time) (string, float64) {
	if t.IsZero() {
		return "-", -1
	}
	d := now.Sub(t)
	return fmtAge(d), d.Seconds()
}

// ages are fmtAge's texts up to two days, made once: the containers view
// asks for 100,000 of them each refresh.
var ages = func() (a struct{ s, m, h [60]string }) {
	for i := range 60 {
		a.s[i], a.m[i], a.h[i] = fmtAge(time.Duration(i)*time.Second), fmtAge(time.Duration(i)*time.Minute), fmtAge(time.Duration(i)*time.Hour)
	}
	return a
}()

// ageText is age's text, without allocating for an age under two days.
func ageText(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	switch d := now.Sub(t); {
	case d < 0:
		return ages.s[0]
	case d < time.Minute:
		return ages.s[d/time.Second]
	case d < time.Hour:
		return ages.m[d/time.Minute]
	case d < 48*time.Hour:
		return ages.h[d/time.Hour]
	default:
		return fmtAge(d)
	}
}

// fmtBytes renders a size as the config, the CLI and submit read and
// write it: 512MiB, 2GiB, 1.5GiB.
func fmtBytes(n int64) string { return view.FormatSize(n) }

func instanceID(v *view.Instance, i int) string {
	if v.ID == "" {
		return "(creating-" + strconv.Itoa(i) + ")"
	}
	return string(v.ID)
}

func instanceRows(s *backend.Snapshot, now time.Time) []table.Row {
	rows := make([]table.Row, len(s.Instances))
	for i := range s.Instances {
		v := &s.Instances[i]
		ag, agn := age(now, v.Created())
		state, stateText := string(v.State), string(v.State)
		if !v.UnreachableSince.IsZero() && v.State != view.InstanceShutdown { // being destroyed says more
			// As text too, so that it reads without colour, with how
			// long it has not answered.
			state = theme.StateUnreachable
			stateText = "unreachable " + fmtAge(now.Sub(v.UnreachableSince))
		}
		rows[i] = table.Row{
			ID:    instanceID(v, i),
			State: state,
			Cells: []string{instanceID(v, i), v.Type, stateText, string(v.IdleBehavior),
				strconv.Itoa(len(v.Containers)), strconv.FormatFloat(v.Price, 'f', 3, 64), ag, v.Address, v.LastError},
			Nums: []float64{0, 0, 0, 0, float64(len(v.Containers)), v.Price, agn, 0, 0},
		}
	}
	return rows
}

func containerState(c *backend.Row) string {
	var b [24]byte
	mark := appendStateMark(b[:0], c)
	if len(mark) == 0 {
		return string(c.State)
	}
	return string(c.State) + string(mark)
}

// appendStateMark appends what the STATE cell shows after the state: a
// failure's exit code, a kill asked for, or a hold.
func appendStateMark(dst []byte, c *backend.Row) []byte {
	switch {
	case c.Failed():
		// As text too: without colour, and at widths that drop
		// REASON, a failure must not read like a success.
		dst = append(dst, " "+failMark...)
		return strconv.AppendInt(dst, int64(c.Exit), 10)
	case c.KillRequested && !c.State.Final():
		return append(dst, " kill"...)
	case c.Held && !c.State.Final():
		return append(dst, " held"...)
	}
	return dst
}

// ageKey sorts as the age of a thing created at ns (unix nanoseconds, 0
// for never: before every age) would, whenever it is taken.
func ageKey(ns int64) float64 {
	if ns == 0 {
		return -math.MaxFloat64
	}
	return -float64(ns) / 1e9
}

// failMark marks a failed container's state: "Complete ✗1" (exit 1).
const failMark = "✗"

// containerName is the NAME cell: "-" for an unnamed container (whose
// name is its id, already in the ID column).
func containerName(c *backend.Row) string {
	if c.Name == "" || c.Name == c.ID {
		return "-"
	}
	return c.Name
}

func typeRows(s *backend.Snapshot) []table.Row {
	rows := make([]table.Row, len(s.Types))
	for i, t := range s.Types {
		var by []string
		for st, n := range t.ByState {
			if n > 0 {
				// The state first: after the INSTANCES count, "7 7
				// running" read as one number too many.
				by = append(by, fmt.Sprintf("%s %d", st, n))
			}
		}
		slices.Sort(by)
		spot := "no"
		if t.Preemptible {
			spot = "yes"
		}
		rows[i] = table.Row{
			ID: t.Name,
			Cells: []string{t.Name, t.ProviderType, strconv.Itoa(t.VCPUs), fmtBytes(t.RAM), fmtBytes(t.Scratch),
				strconv.Itoa(t.GPUs), strconv.FormatFloat(t.Price, 'f', 3, 64), spot, strconv.Itoa(t.Count), strings.Join(by, ", ")},
			Nums: []float64{0, 0, float64(t.VCPUs), float64(t.RAM), float64(t.Scratch), float64(t.GPUs), t.Price, 0, float64(t.Count), 0},
		}
	}
	return rows
}

func eventRows(s *backend.Snapshot) []table.Row {
	rows := make([]table.Row, 0, len(s.Events))
	for i := len(s.Events) - 1; i >= 0; i-- { // newest first
		e := s.Events[i]
		seq := strconv.FormatUint(e.Seq, 10)
		action, reason := eventWords(&e)
		rows = append(rows, table.Row{
			ID:    seq,
			Cells: []string{seq, e.Time.Format("15:04:05"), e.Actor, e.Kind, e.Target, action, reason},
			Nums:  []float64{float64(e.Seq), 0, 0, 0, 0, 0, 0},
		})
	}
	return rows
}

// transition is an instance's state change at the start of its event's
// message: "booting -> idle (0 containers)".
var transition = regexp.MustCompile(`^(\S+ -> \S+)\s*(.*)$`)

// eventWords are an event's ACTION and REASON as the events view shows
// them. The pool's events repeat their kind as their action ("state",
// "state", "booting -> idle"): the change is the action then, as a
// container's new state is, and a message that starts with the kind's
// verb ("created small instance") gives it.
func eventWords(e *view.Event) (action, reason string) {
	if e.Action != e.Kind {
		return e.Action, e.Reason
	}
	if m := transition.FindStringSubmatch(e.Reason); m != nil {
		return m[1], strings.TrimSuffix(strings.TrimPrefix(m[2], "("), ")")
	}
	verb, rest, _ := strings.Cut(e.Reason, " ")
	if len(verb) >= 4 && len(e.Kind) >= 4 && strings.EqualFold(verb[:4], e.Kind[:4]) {
		return verb, rest
	}
	return "-", e.Reason
}
