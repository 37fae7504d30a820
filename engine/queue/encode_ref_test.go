package queue

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// The encoders as they were before they were tuned (commit 368c0fa), kept
// as the reference the tuned ones must match byte for byte
// (TestAppendMatchesReference, FuzzAppendContainer).

// refAppendContainer appends c's stored JSON to b.
func refAppendContainer(b []byte, c *Container) ([]byte, error) {
	var err error
	b = append(b, `{"state":`...)
	b = refAppendJSONString(b, string(c.State))
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(c.Priority), 10)
	b = append(b, `,"held":`...)
	b = strconv.AppendBool(b, c.Held)
	b = append(b, `,"runtime_constraints":{"vcpus":`...)
	rc := &c.RuntimeConstraints
	b = strconv.AppendInt(b, int64(rc.VCPUs), 10)
	b = append(b, `,"ram":`...)
	b = strconv.AppendInt(b, rc.RAM, 10)
	b = append(b, `,"scratch":`...)
	b = strconv.AppendInt(b, rc.Scratch, 10)
	b = append(b, `,"gpus":`...)
	b = strconv.AppendInt(b, int64(rc.GPUs), 10)
	b = append(b, `},"first_seen_at":`...)
	if b, err = refAppendJSONTime(b, c.FirstSeenAt); err != nil {
		return b, err
	}
	b = append(b, `,"id":`...)
	b = refAppendJSONString(b, c.ID)
	b = append(b, `,"name":`...)
	b = refAppendJSONString(b, c.Name)
	b = append(b, `,"command":`...)
	b = refAppendJSONStrings(b, c.Command)
	if len(c.Env) > 0 {
		b = append(b, `,"env":`...)
		b = refAppendJSONMap(b, c.Env)
	}
	if c.Image != "" {
		b = append(b, `,"image":`...)
		b = refAppendJSONString(b, c.Image)
	}
	b = append(b, `,"scheduling":{"preemptible":`...)
	if p := c.Scheduling.Preemptible; p == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendBool(b, *p)
	}
	b = append(b, `,"max_run_time":`...)
	b = refAppendJSONString(b, time.Duration(c.Scheduling.MaxRunTime).String())
	if len(c.Scheduling.Labels) > 0 {
		b = append(b, `,"labels":`...)
		b = refAppendJSONMap(b, c.Scheduling.Labels)
	}
	if c.Scheduling.Supervisor {
		b = append(b, `,"supervisor":true`...)
	}
	b = append(b, `},"exit_code":`...)
	if c.ExitCode == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*c.ExitCode), 10)
	}
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(c.Attempts), 10)
	b = append(b, `,"max_attempts":`...)
	b = strconv.AppendInt(b, int64(c.MaxAttempts), 10)
	b = append(b, `,"restart_policy":`...)
	b = refAppendJSONString(b, c.RestartPolicy)
	b = append(b, `,"instance_type":`...)
	b = refAppendJSONString(b, c.InstanceType)
	b = append(b, `,"instance_id":`...)
	b = refAppendJSONString(b, c.InstanceID)
	b = append(b, `,"created_at":`...)
	if b, err = refAppendJSONTime(b, c.CreatedAt); err != nil {
		return b, err
	}
	for _, t := range [...]struct {
		key string
		t   time.Time
	}{{`,"locked_at":`, c.LockedAt}, {`,"started_at":`, c.StartedAt}, {`,"finished_at":`, c.FinishedAt}} {
		if t.t.IsZero() {
			continue
		}
		b = append(b, t.key...)
		if b, err = refAppendJSONTime(b, t.t); err != nil {
			return b, err
		}
	}
	b = append(b, `,"reason":`...)
	b = refAppendJSONString(b, c.Reason)
	b = append(b, `,"reason_code":`...)
	b = refAppendJSONString(b, string(c.ReasonCode))
	if c.KillRequested {
		b = append(b, `,"kill_requested":true`...)
	}
	if c.RunnerSeen {
		b = append(b, `,"runner_seen":true`...)
	}
	if c.KillReason != "" {
		b = append(b, `,"kill_reason":`...)
		b = refAppendJSONString(b, c.KillReason)
	}
	if c.LogsError != "" {
		b = append(b, `,"logs_error":`...)
		b = refAppendJSONString(b, c.LogsError)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, c.Seq, 10)
	if c.HealthCheck != nil {
		b = append(b, `,"health_check":`...)
		if b, err = refAppendMarshal(b, c.HealthCheck); err != nil {
			return b, err
		}
	}
	// Health is in memory only (see Container.Health).
	return append(b, '}'), nil
}

// refAppendEvent appends e's stored JSON to b.
func refAppendEvent(b []byte, e *Event) ([]byte, error) {
	var err error
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":`...)
	if b, err = refAppendJSONTime(b, e.Time); err != nil {
		return b, err
	}
	b = append(b, `,"actor":`...)
	b = refAppendJSONString(b, e.Actor)
	b = append(b, `,"kind":`...)
	b = refAppendJSONString(b, e.Kind)
	b = append(b, `,"target":`...)
	b = refAppendJSONString(b, e.Target)
	b = append(b, `,"action":`...)
	b = refAppendJSONString(b, e.Action)
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = refAppendJSONString(b, e.Reason)
	}
	return append(b, '}'), nil
}

// refAppendMarshal appends json.Marshal's encoding of v.
func refAppendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// refAppendJSONString appends s quoted. Printable ASCII other than the
// characters encoding/json escapes (quote, backslash, and <, >, & for HTML)
// is copied; anything else goes through json.Marshal, so the escapes stay
// exactly its own.
func refAppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// refAppendJSONStrings appends ss as a JSON array (null when nil).
func refAppendJSONStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = refAppendJSONString(b, s)
	}
	return append(b, ']')
}

// refAppendJSONMap appends m as a JSON object with sorted keys, as
// encoding/json writes maps.
func refAppendJSONMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = refAppendJSONString(b, k)
		b = append(b, ':')
		b = refAppendJSONString(b, m[k])
	}
	return append(b, '}')
}

// refAppendJSONTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, quoted); a year it refuses gets its error.
func refAppendJSONTime(b []byte, t time.Time) ([]byte, error) {
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off <= -24*3600 || off >= 24*3600 {
		return refAppendMarshal(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}
