package queue

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// The store's records are JSON, read back with encoding/json. A flush
// writes thousands of them per pass, and reflection-driven json.Marshal was
// most of its cost, so records and events are written by the hand-made
// appenders below into one reused buffer. Their output is byte for byte
// what json.Marshal writes (TestAppendContainerMatchesMarshal): the store's
// format does not change. The rare parts (a string that needs escaping, a
// health check, a year outside 0–9999) are handed to json.Marshal.

// appendContainer appends c's stored JSON to b.
func appendContainer(b []byte, c *Container) ([]byte, error) {
	var err error
	b = append(b, `{"state":`...)
	b = appendJSONString(b, string(c.State))
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
	if b, err = appendJSONTime(b, c.FirstSeenAt); err != nil {
		return b, err
	}
	b = append(b, `,"id":`...)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, c.Name)
	b = append(b, `,"command":`...)
	b = appendJSONStrings(b, c.Command)
	if len(c.Env) > 0 {
		b = append(b, `,"env":`...)
		b = appendJSONMap(b, c.Env)
	}
	if c.Image != "" {
		b = append(b, `,"image":`...)
		b = appendJSONString(b, c.Image)
	}
	b = append(b, `,"scheduling":{"preemptible":`...)
	if p := c.Scheduling.Preemptible; p == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendBool(b, *p)
	}
	b = append(b, `,"max_run_time":`...)
	b = appendJSONString(b, time.Duration(c.Scheduling.MaxRunTime).String())
	if len(c.Scheduling.Labels) > 0 {
		b = append(b, `,"labels":`...)
		b = appendJSONMap(b, c.Scheduling.Labels)
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
	b = appendJSONString(b, c.RestartPolicy)
	b = append(b, `,"instance_type":`...)
	b = appendJSONString(b, c.InstanceType)
	b = append(b, `,"instance_id":`...)
	b = appendJSONString(b, c.InstanceID)
	b = append(b, `,"created_at":`...)
	if b, err = appendJSONTime(b, c.CreatedAt); err != nil {
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
		if b, err = appendJSONTime(b, t.t); err != nil {
			return b, err
		}
	}
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, c.Reason)
	b = append(b, `,"reason_code":`...)
	b = appendJSONString(b, string(c.ReasonCode))
	if c.KillRequested {
		b = append(b, `,"kill_requested":true`...)
	}
	if c.RunnerSeen {
		b = append(b, `,"runner_seen":true`...)
	}
	if c.KillReason != "" {
		b = append(b, `,"kill_reason":`...)
		b = appendJSONString(b, c.KillReason)
	}
	if c.LogsError != "" {
		b = append(b, `,"logs_error":`...)
		b = appendJSONString(b, c.LogsError)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, c.Seq, 10)
	if c.HealthCheck != nil {
		b = append(b, `,"health_check":`...)
		if b, err = appendMarshal(b, c.HealthCheck); err != nil {
			return b, err
		}
	}
	// Health is in memory only (see Container.Health).
	return append(b, '}'), nil
}

// appendEvent appends e's stored JSON to b.
func appendEvent(b []byte, e *Event) ([]byte, error) {
	var err error
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":`...)
	if b, err = appendJSONTime(b, e.Time); err != nil {
		return b, err
	}
	b = append(b, `,"actor":`...)
	b = appendJSONString(b, e.Actor)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, e.Kind)
	b = append(b, `,"target":`...)
	b = appendJSONString(b, e.Target)
	b = append(b, `,"action":`...)
	b = appendJSONString(b, e.Action)
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, e.Reason)
	}
	return append(b, '}'), nil
}

// appendMarshal appends json.Marshal's encoding of v.
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendJSONString appends s quoted. Printable ASCII other than the
// characters encoding/json escapes (quote, backslash, and <, >, & for HTML)
// is copied; anything else goes through json.Marshal, so the escapes stay
// exactly its own.
func appendJSONString(b []byte, s string) []byte {
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

// appendJSONStrings appends ss as a JSON array (null when nil).
func appendJSONStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONMap appends m as a JSON object with sorted keys, as
// encoding/json writes maps.
func appendJSONMap(b []byte, m map[string]string) []byte {
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
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

// appendJSONTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, quoted); a year it refuses gets its error.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off <= -24*3600 || off >= 24*3600 {
		return appendMarshal(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}
