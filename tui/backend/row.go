// A container as the console's tables need it: a compact row (what the
// tables, header counts, sort and filter read), the full record being
// fetched on demand for details, logs and YAML (docs/design.md §7.2).

package backend

import (
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// Row is one container, compactly: about a third of a view.Container,
// with its repeated strings (state, instance, reason, labels) shared
// between rows by the interner that built it.
type Row struct {
	ID   string
	Name string
	// InstanceID is where it runs or ran ("" for none).
	InstanceID string
	// Reason is why it waits or ended, "" while it shows its place in
	// the line (Slots.Place): ReasonText renders that one.
	Reason     string
	ReasonCode view.ReasonCode
	State      view.State
	// Tags is what the filter matches beyond the columns: its labels and
	// constraints as sorted "k=v", then "supervisor"; "" for none.
	Tags        string
	RAM         int64
	CreatedAt   int64 // unix nanoseconds
	FirstSeenAt int64 // unix nanoseconds; 0 for never
	Seq         uint64
	Priority    int32
	VCPUs       int32
	Attempts    int32
	MaxAttempts int32
	Exit        int32 // its exit code, when HasExit
	// Ver is the version of its Rows at which it last changed (Rows.Each);
	// a change of its place alone is kept apart (Slots.Ver).
	Ver uint32

	HasExit       bool
	Held          bool
	KillRequested bool
	// gone: taken out of an attached console's copy, its slot kept
	// until the copy is compacted (Rows).
	gone bool
}

// Gone reports whether the row was taken out (Rows.Read shows it in its
// slot until the rows are compacted).
func (r *Row) Gone() bool { return r.gone }

// same reports whether a and b show the same (Ver aside).
func same(a, b *Row) bool {
	x, y := *a, *b
	x.Ver, y.Ver = 0, 0
	return x == y
}

// ReasonText is the row's reason as the API shows it, given its place
// in the line (Slots.Place; 0 for none shown).
func (r *Row) ReasonText(place int32) string {
	if place > 0 {
		return view.Pending{Code: view.ReasonPosition, N: int(place)}.Text()
	}
	return r.Reason
}

// AppendReason appends ReasonText without making a string of it: a
// filter reads every row's, and most of a long queue's are "position N
// in queue".
func (r *Row) AppendReason(dst []byte, place int32) []byte {
	if place > 0 {
		dst = append(dst, posText.head...)
		dst = strconv.AppendInt(dst, int64(place), 10)
		return append(dst, posText.tail...)
	}
	return append(dst, r.Reason...)
}

// PositionWords are the words of a place in the line's reason before
// and after its number (AppendReason): the same in every row's, so a
// filter searches them once, not once a row.
func PositionWords() (head, tail string) { return posText.head, posText.tail }

// posText is a place in the line's reason around its number, taken from
// view.Pending's text once so that the wording stays there alone.
var posText = func() (p struct{ head, tail string }) {
	const n = 987654321
	t := view.Pending{Code: view.ReasonPosition, N: n}.Text()
	head, tail, ok := strings.Cut(t, strconv.Itoa(n))
	if !ok {
		panic("backend: the position reason " + strconv.Quote(t) + " does not show its number")
	}
	p.head, p.tail = head, tail
	return p
}()

// Created is when it was submitted.
func (r *Row) Created() time.Time { return unixTime(r.CreatedAt) }

// Failed reports whether it completed with a non-zero exit code.
func (r *Row) Failed() bool { return r.State == view.Complete && r.HasExit && r.Exit != 0 }

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// RowOf makes c's row, its strings shared through in (nil: not shared).
func RowOf(c *view.Container, in *Interner) Row {
	var p api.Pairs
	var buf []byte
	return rowOfMaps(c, in, &p, &buf)
}

// rowOfMaps is RowOf with the scratch of its tags, p and buf, kept by the
// caller from one row to the next (rowOfPairs).
func rowOfMaps(c *view.Container, in *Interner, p *api.Pairs, buf *[]byte) Row {
	p.SetMaps(c)
	return rowOfPairs(c, p, in, buf)
}

// rowOfPairs is RowOf of a view read with its labels and constraints in
// p instead of maps (api.Client.ContainerChangesPairs): its tags are
// made in buf, kept for the next, and become a string only when in holds
// none like them (BENCHMARKS.md, helper apply).
func rowOfPairs(c *view.Container, p *api.Pairs, in *Interner, buf *[]byte) Row {
	*buf = appendTags((*buf)[:0], p, c.Scheduling.Supervisor)
	return rowOf(c, in, in.GetBytes(*buf))
}

// appendTags appends Row.Tags of a view whose labels and constraints are
// in p: its "k=v" sorted as strings, then "supervisor" for a supervisor,
// joined by spaces.
func appendTags(dst []byte, p *api.Pairs, supervisor bool) []byte {
	b := p.AppendTags(dst)
	if supervisor {
		if len(b) > len(dst) {
			b = append(b, ' ')
		}
		b = append(b, "supervisor"...)
	}
	return b
}

// rowOf makes c's row with the tags given (Row.Tags).
func rowOf(c *view.Container, in *Interner, tags string) Row {
	r := Row{
		ID: c.ID, Name: c.Name,
		InstanceID: in.Get(c.InstanceID), ReasonCode: view.ReasonCode(in.Get(string(c.ReasonCode))),
		State: view.State(in.Get(string(c.State))), Tags: tags,
		RAM: c.RuntimeConstraints.RAM, CreatedAt: unixNano(c.CreatedAt), FirstSeenAt: unixNano(c.FirstSeenAt),
		Seq: c.Seq, Priority: int32(c.Priority), VCPUs: int32(c.RuntimeConstraints.VCPUs),
		Attempts: int32(c.Attempts), MaxAttempts: int32(c.MaxAttempts),
		Held: c.Held, KillRequested: c.KillRequested,
	}
	if c.Name == c.ID {
		r.Name = r.ID // one string, not two
	}
	if c.ExitCode != nil {
		r.HasExit, r.Exit = true, int32(*c.ExitCode)
	}
	if c.ReasonCode != view.ReasonPosition {
		r.Reason = in.Get(c.Reason)
	}
	return r
}

// placeOf is c's place in the line as its record says (0 for none): an
// in-process console's rows are numbered by the engine; an attached
// console numbers its own (Rows.numberLine).
func placeOf(c *view.Container) int32 {
	switch {
	case c.ReasonCode != view.ReasonPosition:
		return 0
	case c.Pending.Code == view.ReasonPosition:
		return int32(c.Pending.N)
	}
	return positionOf(c.Reason)
}

// positionOf reads N from "position N in queue" (0 if it is not that).
func positionOf(reason string) int32 {
	s, ok := strings.CutPrefix(reason, "position ")
	if !ok {
		return 0
	}
	var n int32
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int32(s[i]-'0')
	}
	return n
}

// Interner shares equal strings: rows keep one copy of each state,
// instance id, reason and label set. It is not safe for concurrent use.
type Interner struct {
	m map[string]string
}

// internMax bounds an Interner: past it, it starts again empty (rows keep
// their strings; later equal ones are just not shared with them), so
// reasons and instance ids seen over weeks do not pile up.
const internMax = 1 << 16

// Get returns the shared copy of s (s itself the first time, and always
// for a nil Interner).
func (in *Interner) Get(s string) string {
	if in == nil || s == "" {
		return s
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	if in.m == nil || len(in.m) >= internMax {
		in.m = make(map[string]string)
	}
	in.m[s] = s
	return s
}

// GetBytes is Get(string(b)), making the string only when in holds none
// equal to b.
func (in *Interner) GetBytes(b []byte) string {
	if in == nil || len(b) == 0 {
		return string(b)
	}
	if v, ok := in.m[string(b)]; ok {
		return v
	}
	return in.Get(string(b))
}
