// Package view is what crosses the engine's edge: the container and
// instance views the API, its client, the CLI and the console read, typed
// verbs, states, pending reasons and the kinds of error a request meets.
// The queue's cache-tuned record stays private to the queue, which makes
// these views of it in one place.
package view

import (
	"encoding/json"
	"fmt"
	"time"

	"dispatch-tui/engine/runner"
)

// Container is a container as the engine shows it (docs/design.md §3): a
// copy, safe to keep. Its JSON is the API's.
//
// The queue's record (engine/queue) embeds ContainerBody and ContainerTail
// too, so each of those fields is spelled once. The fields around them are
// spelled in both: the record packs its private fields into the padding
// after Held and after RunnerSeen (its layout_test.go), padding an
// embedded struct would keep to itself.
type Container struct {
	State              State       `json:"state"`
	Priority           int         `json:"priority"`
	Held               bool        `json:"held"`
	RuntimeConstraints Constraints `json:"runtime_constraints"`
	FirstSeenAt        time.Time   `json:"first_seen_at"`
	ContainerBody
	// KillRequested is set when an operator killed a running container; it
	// ends Cancelled once its process is confirmed dead.
	KillRequested bool `json:"kill_requested,omitempty"`
	// RunnerSeen is set once a runner has listed the current attempt.
	RunnerSeen bool `json:"runner_seen,omitempty"`
	// LogsTruncated is how many bytes were cut from the start of the
	// stored output of its finished attempt (0: none, or nothing stored).
	LogsTruncated int64 `json:"logs_truncated,omitempty"`
	ContainerTail
	// Pending is the reason the last scheduler pass left on it, in
	// process only: the API sends its text as Reason.
	Pending Pending `json:"-"`
}

// ContainerBody is most of a container: its spec and its attempts, as
// the API shows them and the store keeps them.
type ContainerBody struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	Image   string            `json:"image,omitempty"`
	// Labels are free metadata (team, workflow, batch) for selecting and
	// accounting; placement is Scheduling.Constraints.
	Labels        map[string]string `json:"labels,omitempty"`
	Scheduling    Scheduling        `json:"scheduling"`
	ExitCode      *int              `json:"exit_code"`
	Attempts      int               `json:"attempts"`
	MaxAttempts   int               `json:"max_attempts"`
	RestartPolicy string            `json:"restart_policy"`
	InstanceType  string            `json:"instance_type"`
	InstanceID    string            `json:"instance_id"`
	CreatedAt     time.Time         `json:"created_at"`
	LockedAt      time.Time         `json:"locked_at,omitzero"`
	StartedAt     time.Time         `json:"started_at,omitzero"`
	FinishedAt    time.Time         `json:"finished_at,omitzero"`
	// Reason is why it waits (its pending reason, for one not final) or
	// why it ended; a record keeps only why it ended, the view fills in
	// the pending reason.
	Reason     string     `json:"reason"`
	ReasonCode ReasonCode `json:"reason_code"`
}

// ContainerTail is the rest of a container after its body (see Container
// for why it is apart).
type ContainerTail struct {
	KillReason string `json:"kill_reason,omitempty"`
	// LogsError says why the output of a finished attempt is not stored
	// (it could not be written, or its instance went away before it was
	// fetched); empty once it is stored.
	LogsError string `json:"logs_error,omitempty"`
	// Seq orders containers submitted in the same instant.
	Seq uint64 `json:"seq"`
	// HealthCheck is the command the runner runs beside the container;
	// nil for none.
	HealthCheck *HealthCheck `json:"health_check,omitempty"`
	// Health is what its runner last reported of the health check. It
	// changes every interval, so the queue keeps it in memory and never
	// writes it to the store.
	Health *Health `json:"health,omitempty"`
}

// Health is what a container's runner last reported of its health check:
// the runner's own type (engine/runner), named here so that readers of
// the edge need not import the runner.
type Health = runner.Health

// Constraints are a container's runtime resource needs. Sizes are bytes.
type Constraints struct {
	VCPUs   int   `json:"vcpus"`
	RAM     int64 `json:"ram"`
	Scratch int64 `json:"scratch"`
	GPUs    int   `json:"gpus"`
}

// Duration is a time.Duration that reads and writes JSON as "90s" (numbers
// are taken as nanoseconds).
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "90s" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a duration such as \"90s\", \"10m\" or \"2h\", got %q", s)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"90s\"")
	}
	*d = Duration(n)
	return nil
}

// Scheduling holds placement hints.
type Scheduling struct {
	// Preemptible lets the container run on preemptible (spot) types. nil
	// only in a spec: submit stores [containers] always_use_preemptible
	// there, so a record says what was decided.
	Preemptible *bool    `json:"preemptible"`
	MaxRunTime  Duration `json:"max_run_time"`
	// Constraints are placement: the container goes only to types whose
	// labels have each of them (docs/design.md §5).
	Constraints map[string]string `json:"constraints,omitempty"`
	// Supervisor marks a workflow runner that submits children: at most
	// [dispatcher] supervisor_fraction of the instance limit of them are
	// Locked or Running at once, so children always find room.
	Supervisor bool `json:"supervisor,omitempty"`
}

// IsPreemptible reports whether a container may run on preemptible types.
func (s *Scheduling) IsPreemptible() bool { return s.Preemptible != nil && *s.Preemptible }

// HealthCheck is a container's health check as submitted and stored
// (durations as "10s"); runner.HealthCheck says what the runner does with
// it. Omitted interval, timeout and retries take runner's defaults at
// submit, so the record holds what runs.
type HealthCheck struct {
	Command  []string `json:"command"`
	Interval Duration `json:"interval,omitempty"`
	Timeout  Duration `json:"timeout,omitempty"`
	Retries  int      `json:"retries,omitempty"`
}

// Runner returns h for the runner, with defaults for omitted fields; nil
// for no health check.
func (h *HealthCheck) Runner() *runner.HealthCheck {
	if h == nil {
		return nil
	}
	r := runner.HealthCheck{
		Command:  h.Command,
		Interval: time.Duration(h.Interval),
		Timeout:  time.Duration(h.Timeout),
		Retries:  h.Retries,
	}.WithDefaults()
	return &r
}

// Clone returns a deep copy of h.
func (h *HealthCheck) Clone() *HealthCheck {
	if h == nil {
		return nil
	}
	c := *h
	c.Command = append([]string(nil), h.Command...)
	return &c
}
