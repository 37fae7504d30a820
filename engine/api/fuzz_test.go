package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
)

// FuzzDecodeSpec: decoding a request body never panics; what it accepts
// is a valid spec that survives a JSON round trip; what it refuses is a
// 400 whose message names the field it reports.
func FuzzDecodeSpec(f *testing.F) {
	for _, s := range []string{
		``,
		`{}`,
		`null`,
		`{"command":["echo","hi"]}`,
		`{"name":"n","command":["x"],"env":{"A":"1"},"image":"alpine","runtime_constraints":{"vcpus":2,"ram":1073741824,"scratch":0,"gpus":0},"scheduling":{"preemptible":true,"max_run_time":"90s","labels":{"k":"v"}},"priority":3,"max_attempts":2,"restart_policy":"on-failure"}`,
		`{"command":["x"],"runtime_constraints":{"vcpus":"two"}}`,
		`{"command":["x"],"runtime_constraints":{"ram":-1}}`,
		`{"command":["x"],"runtime_constraints":{"cpus":1}}`,
		`{"command":["x"],"scheduling":{"max_run_time":12345}}`,
		`{"command":["x"],"scheduling":{"max_run_time":"bogus"}}`,
		`{"command":["x"],"env":{"":"v"}}`,
		`{"command":["x"]} trailing`,
		`{"command":["x"],"priority":1e400}`,
		`{"Command":["x"],"PRIORITY":2}`,
		`[`,
		"{\"command\":[\"\xff\"]}",
		`{"command":["a\u0000b"],"env":{"A=B":"\u0000"},"image":"--x"}`,
		`{"name":"\u001b[31m\u009b","command":["<<<<<<<<"],"runtime_constraints":{"ram":9223372036854775807}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, herr := decodeSpec(data)
		if herr != nil {
			if herr.status != http.StatusBadRequest || herr.msg == "" {
				t.Fatalf("error %d %q", herr.status, herr.msg)
			}
			if herr.field != "" && !strings.Contains(herr.msg, herr.field) {
				t.Fatalf("message %q does not name field %q", herr.msg, herr.field)
			}
		} else {
			if err := queue.ValidateSpec(&spec); err != nil {
				t.Fatalf("accepted an invalid spec: %v", err)
			}
			b, err := json.Marshal(spec)
			if err != nil {
				t.Fatalf("marshal accepted spec: %v", err)
			}
			if _, herr := decodeSpec(b); herr != nil {
				t.Fatalf("round trip of %s: %s", b, herr.msg)
			}
			// What a submit accepts, the runner accepts once the
			// container has an id (the longest there can be).
			rs := runner.Spec{ID: strings.Repeat("c", 128), Command: spec.Command, Env: spec.Env, Image: spec.Image,
				MaxRunTime: time.Duration(spec.Scheduling.MaxRunTime)}
			if err := runner.ValidateSpec(&rs); err != nil {
				t.Fatalf("accepted at submit, the runner would refuse: %v", err)
			}
		}
		// The verb bodies go through the same decoder.
		var rb reasonBody
		decodeJSON(data, &rb)
		var pb priorityBody
		decodeJSON(data, &pb)
	})
}

// FuzzListQuery: query parsing never panics; what it accepts is in range;
// what it refuses is a 400 naming the parameter.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{
		``,
		`state=Queued`,
		`state=queued,Running&state=Cancelled`,
		`state=Nope`,
		`q=job&sort=-priority&offset=10&limit=5`,
		`sort=size`,
		`offset=-1`,
		`limit=abc`,
		`limit=99999999999999999999`,
		`limit=0&offset=0`,
		`since=5&tail=3&follow=1`,
		`follow=maybe&tail=-1&since=-1`,
		`state=,,&sort=-`,
	} {
		f.Add(s)
	}
	params := []string{"state", "sort", "offset", "limit"}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, herr := parseListQuery(v)
		if herr != nil {
			if herr.status != http.StatusBadRequest || !slices.Contains(params, herr.field) {
				t.Fatalf("error %d field %q: %s", herr.status, herr.field, herr.msg)
			}
		} else {
			if o.Offset < 0 || o.Limit < 1 || o.Limit > MaxListLimit {
				t.Fatalf("offset %d limit %d out of range", o.Offset, o.Limit)
			}
			if o.Sort != "" && !slices.Contains(ListSorts, strings.TrimPrefix(o.Sort, "-")) {
				t.Fatalf("sort %q accepted", o.Sort)
			}
			for i, st := range o.States {
				if !slices.Contains(queue.States[:], st) || slices.Contains(o.States[:i], st) {
					t.Fatalf("states %v", o.States)
				}
			}
		}
		if eq, herr := parseEventsQuery(v); herr == nil && (eq.Limit < 1 || eq.Limit > MaxListLimit) {
			t.Fatalf("events limit %d", eq.Limit)
		} else if herr != nil && herr.field != "since" && herr.field != "limit" {
			t.Fatalf("events error field %q", herr.field)
		}
		if lq, herr := parseLogsQuery(v); herr == nil && lq.Tail < 0 {
			t.Fatalf("tail %d", lq.Tail)
		} else if herr != nil && herr.field != "tail" && herr.field != "follow" {
			t.Fatalf("logs error field %q", herr.field)
		}
	})
}
