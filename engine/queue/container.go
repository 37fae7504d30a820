// Package queue holds container records in memory, as the index the
// scheduler walks every pass, with the legal state transitions
// (states.txt, docs/design.md §3), the event log and change
// notifications; what changes goes to a store (engine/store).
package queue

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/statediagram"
	"dispatch-tui/engine/view"
)

// containerStates is States as the diagram names them.
var containerStates = func() []string {
	out := make([]string, len(States))
	for i, s := range States {
		out[i] = string(s)
	}
	return out
}()

// stateDiagram is states.txt: the container state diagram, which is also
// the table of the state changes CanTransition allows.
//
//go:embed states.txt
var stateDiagram string

// allowed[from][to] is the diagram as a table indexed by stateIndex, read
// once: CanTransition is on every Tx state change.
var allowed = func() (t [len(States)][len(States)]bool) {
	d := statediagram.MustParse("engine/queue/states.txt", stateDiagram, containerStates)
	for _, tr := range d.Transitions() {
		if tr.From != statediagram.Entering {
			t[stateIndex(State(tr.From))][stateIndex(State(tr.To))] = true
		}
	}
	return t
}()

// stateIndex is s's index in States, or -1 for a state that is not one.
func stateIndex(s State) int {
	for i, st := range States {
		if st == s {
			return i
		}
	}
	return -1
}

// CanTransition reports whether a container may move from one state to
// another: whether states.txt lists the change.
func CanTransition(from, to State) bool {
	f, t := stateIndex(from), stateIndex(to)
	return f >= 0 && t >= 0 && allowed[f][t]
}

// Restart policies.
const (
	RestartNever     = "never"
	RestartOnFailure = "on-failure"
)

// Container is one container record (docs/design.md §3), laid out for the
// scheduler's pass and the store; what leaves the engine is its view
// (view.Container, made by Container.view).
type Container struct {
	// The fields a scheduler pass reads for every container come first, so
	// a pass over 100,000 records touches as few cache lines as possible.
	State              State       `json:"state"`
	Priority           int         `json:"priority"`
	Held               bool        `json:"held"`
	hints              schedHints  // from Scheduling, in the padding after Held
	ord                orderSlot   // the queue's order (order.go), in the same padding
	dirty              bool        // in q.dirty, for the next flush to write (in the padding too)
	startSent          bool        // below, with RunnerSeen; in the last byte of padding
	RuntimeConstraints Constraints `json:"runtime_constraints"`
	FirstSeenAt        time.Time   `json:"first_seen_at"`

	// The spec and attempts: one definition with the view's (see
	// view.Container for why the fields around it are spelled here too).
	view.ContainerBody
	// KillRequested is set when an operator killed a running container; it
	// ends Cancelled once its process is confirmed dead.
	KillRequested bool `json:"kill_requested,omitempty"`
	// RunnerSeen is set once a runner has listed the current attempt.
	RunnerSeen bool `json:"runner_seen,omitempty"`
	// startSent (in the first line) is set, in memory only, while this
	// process has the start of the current attempt to make or has made
	// it: a Running container no runner lists was never started only when
	// neither a runner saw it nor this process sent its start (it was
	// recorded just before a crash). A start that was sent may have run
	// and its record been lost since, so its attempt counts.
	//
	// shape is the queue's id of RuntimeConstraints (entries.go), in the
	// padding after RunnerSeen.
	shape uint16
	// LogsTruncated is how much was cut from the start of the stored
	// output of its finished attempt, which was over [containers]
	// max_output (0: none, or nothing stored). In the padding after shape.
	LogsTruncated TruncatedOutput `json:"logs_truncated,omitempty"`
	// KillReason, LogsError, Seq, HealthCheck (health.go) and Health,
	// which appendContainer leaves out: Health changes every interval, so
	// it is kept in memory only.
	view.ContainerTail
	// pend is the reason if its entry beside the scheduling order says it
	// is here (entries.go: a position, the common one, is kept there),
	// and the priority the record is placed in the order by (order.go).
	pend pendingRec
}

// schedHints says, in the record's first cache line, which scheduling
// fields a pass must read: most containers have neither, and a pass over
// 100,000 of them should not load the line Scheduling is on to find out.
// Its spare bits are the change log's marks (changes.go): the record has
// no room for another field.
type schedHints uint8

const (
	hintConstraints schedHints = 1 << iota
	hintSupervisor
	// hintDropped: the record left byID (keep_finished); its entries in
	// the change log are dead.
	hintDropped
	// hintLogged: set only under the lock, during a compaction of the
	// change log on the records whose newest entry it has kept, or during
	// a read of changes on the records already on its page.
	hintLogged
)

// setHints derives hints from Scheduling, which does not change after
// submission; it leaves the change log's marks alone.
func (c *Container) setHints() {
	c.hints &= hintDropped | hintLogged
	if len(c.Scheduling.Constraints) > 0 {
		c.hints |= hintConstraints
	}
	if c.Scheduling.Supervisor {
		c.hints |= hintSupervisor
	}
}

// upgrade reads what an older version stored in record j, the JSON c was
// decoded from: scheduling.labels were placement constraints, under the
// name labels now has. Only a record with labels is decoded again.
func (c *Container) upgrade(j []byte) error {
	if !bytes.Contains(j, []byte(`"labels":`)) || len(c.Scheduling.Constraints) > 0 {
		return nil
	}
	var old struct {
		Scheduling struct {
			Labels map[string]string `json:"labels"`
		} `json:"scheduling"`
	}
	if err := json.Unmarshal(j, &old); err != nil {
		return err
	}
	if len(old.Scheduling.Labels) > 0 {
		c.Scheduling.Constraints = old.Scheduling.Labels
	}
	return nil
}

// HasConstraints reports whether the container has placement constraints
// (from its record's first cache line).
func (c *Container) HasConstraints() bool { return c.hints&hintConstraints != 0 }

// IsSupervisor reports whether the container is a supervisor (from its
// record's first cache line).
func (c *Container) IsSupervisor() bool { return c.hints&hintSupervisor != 0 }

// StartSent reports whether this process made, or is about to make, the
// start of the current attempt (see startSent).
func (c *Container) StartSent() bool { return c.startSent }

// pendingRec is a record's pending reason (N in 32 bits) and ordPrio, the
// priority the record is placed in the order by: 40 bytes where a Pending
// and an int took 48, which keeps a record with labels in the 512-byte
// size class (layout_test.go).
type pendingRec struct {
	code    ReasonCode
	arg     string
	n       int32
	ordPrio int32
}

func (r *pendingRec) get() Pending { return Pending{Code: r.code, N: int(r.n), Arg: r.arg} }

// is reports whether r holds p (N compared as stored).
func (r *pendingRec) is(p Pending) bool {
	return r.code == p.Code && r.arg == p.Arg && r.n == clamp32(p.N)
}

func (r *pendingRec) set(p Pending) { r.code, r.arg, r.n = p.Code, p.Arg, clamp32(p.N) }

// clamp32 is n in 32 bits: priorities are at most MaxPriority, and
// positions and counts are far below it.
func clamp32(n int) int32 { return int32(max(min(n, math.MaxInt32), math.MinInt32)) }

// DefaultVCPUs is the vCPUs of a spec that asks for none (0 or absent),
// through the API and submit alike.
const DefaultVCPUs = 1

// MaxPriority is the highest priority (it is kept in 32 bits).
const MaxPriority = math.MaxInt32

// view is the one place a record becomes what the engine's edge shows
// (package view): a copy safe to hand out, with its pending reason p, and
// Reason filled in from p for containers that are not final.
func (c *Container) view(p Pending) view.Container {
	v := c.sharedView(p)
	// The view shares no slice or map with the record.
	v.Command = append([]string(nil), c.Command...)
	v.Env, v.Labels = copyMap(c.Env), copyMap(c.Labels)
	v.HealthCheck = c.HealthCheck.Clone()
	v.Scheduling.Constraints = copyMap(c.Scheduling.Constraints)
	v.Scheduling.Preemptible = copyBool(c.Scheduling.Preemptible)
	return v
}

// sharedView is c's view sharing the record's command, maps, preemptible
// flag and health check, which the queue never writes in place (a change
// replaces them, intern.go): for a reader that encodes the view and drops
// it (ChangesEach), to which their copies were most of a view's garbage.
// Only what the queue does write in place (the exit code, the health) is
// copied.
func (c *Container) sharedView(p Pending) view.Container {
	v := view.Container{
		State: c.State, Priority: c.Priority, Held: c.Held,
		RuntimeConstraints: c.RuntimeConstraints, FirstSeenAt: c.FirstSeenAt,
		ContainerBody: c.ContainerBody, KillRequested: c.KillRequested, RunnerSeen: c.RunnerSeen,
		LogsTruncated: c.LogsTruncated.Bytes(), ContainerTail: c.ContainerTail, Pending: p,
	}
	if c.ExitCode != nil {
		code := *c.ExitCode
		v.ExitCode = &code
	}
	if c.Health != nil {
		h := *c.Health
		v.Health = &h
	}
	if !c.State.Final() && p.Code != ReasonNone {
		v.Reason = p.Text()
		v.ReasonCode = p.Code
	}
	return v
}

// copyMap returns a copy of m, or nil when m is empty (so that a record reads
// back from the store exactly as it was written: empty maps are omitted).
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ValidateSpec checks a spec's own fields (not whether a type fits it).
// Errors name the offending field.
func ValidateSpec(s *Spec) error {
	if len(s.Command) == 0 || s.Command[0] == "" {
		return &FieldError{Field: "command", Msg: "must not be empty"}
	}
	rc := s.RuntimeConstraints
	switch {
	case rc.VCPUs < 0:
		return &FieldError{Field: "runtime_constraints.vcpus", Msg: "must not be negative"}
	case rc.RAM < 0:
		return &FieldError{Field: "runtime_constraints.ram", Msg: "must not be negative"}
	case rc.Scratch < 0:
		return &FieldError{Field: "runtime_constraints.scratch", Msg: "must not be negative"}
	case rc.GPUs < 0:
		return &FieldError{Field: "runtime_constraints.gpus", Msg: "must not be negative"}
	case s.Scheduling.MaxRunTime < 0:
		return &FieldError{Field: "scheduling.max_run_time", Msg: "must not be negative"}
	case s.Priority != nil && *s.Priority < 0:
		return &FieldError{Field: "priority", Msg: "must not be negative"}
	case s.Priority != nil && *s.Priority > MaxPriority:
		return &FieldError{Field: "priority", Msg: fmt.Sprintf("must be at most %d", MaxPriority)}
	case s.MaxAttempts < 0:
		return &FieldError{Field: "max_attempts", Msg: "must not be negative"}
	}
	if err := validateConstraints(s.Scheduling.Constraints); err != nil {
		return err
	}
	if err := ValidateLabels(s.Labels); err != nil {
		return err
	}
	switch s.RestartPolicy {
	case "", RestartNever, RestartOnFailure:
	default:
		return &FieldError{Field: "restart_policy", Msg: "must be never or on-failure"}
	}
	if len(s.Name) > MaxNameBytes {
		return &FieldError{Field: "name", Msg: fmt.Sprintf("is %d bytes, at most %d", len(s.Name), MaxNameBytes)}
	}
	if !utf8.ValidString(s.Name) || strings.IndexByte(s.Name, 0) >= 0 {
		return &FieldError{Field: "name", Msg: "must be UTF-8 text without NUL bytes"}
	}
	// What the runner would refuse is refused here, with the runner's own
	// checks: a container that could never start is never queued.
	rs := runner.Spec{Command: s.Command, Env: s.Env, Image: s.Image, MaxRunTime: time.Duration(s.Scheduling.MaxRunTime),
		HealthCheck: s.HealthCheck.Runner()}
	if err := runner.ValidateContent(&rs); err != nil {
		var se *runner.SpecError
		if !errors.As(err, &se) {
			return err
		}
		field := se.Field
		if field == "max_run_time" {
			field = "scheduling.max_run_time"
		}
		return &FieldError{Field: field, Msg: se.Msg}
	}
	return nil
}

// validateConstraints checks scheduling.constraints: each key and value
// non-empty text a selector can spell ("k=v": no "=" or "," in a key).
func validateConstraints(cs map[string]string) error {
	const field = "scheduling.constraints"
	if len(cs) > MaxConstraints {
		return &FieldError{Field: field, Msg: fmt.Sprintf("has %d constraints, at most %d", len(cs), MaxConstraints)}
	}
	for k, v := range cs {
		switch {
		case k == "":
			return &FieldError{Field: field, Msg: "a key must not be empty"}
		case strings.ContainsAny(k, "=,") || strings.IndexByte(k, 0) >= 0 || !utf8.ValidString(k):
			return &FieldError{Field: field, Msg: fmt.Sprintf("key %q must be UTF-8 text without \"=\", \",\" or NUL", k)}
		case strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v):
			return &FieldError{Field: field + "." + k, Msg: "must be UTF-8 text without NUL bytes"}
		case len(k)+len(v) > MaxNameBytes:
			return &FieldError{Field: field + "." + k, Msg: fmt.Sprintf("key and value are %d bytes, at most %d", len(k)+len(v), MaxNameBytes)}
		}
	}
	return nil
}

// ValidateLabels checks a container's labels (free metadata): keys are
// non-empty, values may be; neither holds "=", "," or a control character
// (a selector spells them "k=v,k2=v2"), and all of them together are at
// most MaxLabelBytes.
func ValidateLabels(labels map[string]string) error {
	total := 0
	for k, v := range labels {
		total += len(k) + len(v)
		bad := func(s string) bool {
			return strings.ContainsAny(s, "=,") || !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0
		}
		switch {
		case k == "":
			return &FieldError{Field: "labels", Msg: "a key must not be empty"}
		case bad(k):
			return &FieldError{Field: "labels", Msg: fmt.Sprintf("key %q must be UTF-8 text without \"=\", \",\" or control characters", k)}
		case bad(v):
			return &FieldError{Field: "labels." + k, Msg: "must be UTF-8 text without \"=\", \",\" or control characters"}
		}
	}
	if total > MaxLabelBytes {
		return &FieldError{Field: "labels", Msg: fmt.Sprintf("keys and values are %d bytes in all, at most %d", total, MaxLabelBytes)}
	}
	return nil
}

// MaxLabelBytes bounds a container's labels, keys and values together:
// any number of them, as long as they are metadata, not data.
const MaxLabelBytes = 4096

// MaxConstraints bounds how many constraints a container may have.
const MaxConstraints = 32

// MaxNameBytes bounds a container's name: it is for people to read.
const MaxNameBytes = 256

// RenamedLabels is the message for a spec with scheduling.labels, which
// is scheduling.constraints since labels became free metadata.
const RenamedLabels = "placement is now scheduling.constraints (submit --constraint KEY=VALUE); labels at the top level are free metadata (submit --label)"

// FieldError is a validation error about one field of a request.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }
