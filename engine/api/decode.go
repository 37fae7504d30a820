// Reading request bodies: JSON with errors naming the field, and specs with their defaults.

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"dispatch-tui/engine"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// MaxListLimit caps the limit of GET /v1/containers and GET /v1/events;
// it is also the default when no limit is given.
const MaxListLimit = 10000

// readBody reads a request body of at most MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *httpError) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("request body is larger than %d bytes (1 MiB)", MaxBodyBytes)}
		}
		return nil, badRequest("", "read request body: "+err.Error())
	}
	return data, nil
}

// decodeBody reads the body into v. An empty body is an error when
// required, else it leaves v alone.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, required bool) *httpError {
	data, herr := readBody(w, r)
	if herr != nil {
		return herr
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if required {
			return badRequest("", "request body is required (a JSON object)")
		}
		return nil
	}
	return decodeJSON(data, v)
}

// decodeJSON decodes one JSON value into v, refusing unknown fields and
// trailing data. Errors name the offending field when it can be found.
func decodeJSON(data []byte, v any) *httpError {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(data, reflect.TypeOf(v), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("", "malformed JSON body: unexpected data after the JSON value")
	}
	return nil
}

func jsonError(data []byte, t reflect.Type, err error) *httpError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("", "request body is required (a JSON object)")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "malformed JSON body: unexpected end of input")
	case errors.As(err, &se):
		return badRequest("", fmt.Sprintf("malformed JSON body at byte %d: %v", se.Offset, strings.TrimPrefix(se.Error(), "json: ")))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = locateField(data, t, "")
		}
		msg := fmt.Sprintf("want %s, got %s", jsonKind(te.Type), te.Value)
		if field == "" {
			return badRequest("", "malformed JSON body: "+msg)
		}
		return badRequest(field, field+": "+msg)
	}
	field := locateField(data, t, "")
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field ") {
		msg = "unknown field"
		if strings.HasSuffix(field, "scheduling.labels") {
			msg = queue.RenamedLabels
		}
	}
	if field == "" {
		return badRequest("", "malformed JSON body: "+msg)
	}
	return badRequest(field, field+": "+msg)
}

// jsonKind describes a Go type as the JSON a client should send.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// locateField finds the dotted path of the first field of data (a JSON
// document meant for type t) that does not decode: a field with a bad
// value, or an unknown field. It returns "" when it cannot tell. Used only
// on the error path, so it may decode the document more than once.
func locateField(data []byte, t reflect.Type, prefix string) string {
	if t == nil {
		return prefix
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(reflect.New(t).Interface()); err != nil {
			return prefix
		}
		return ""
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return prefix // not an object (or broken)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		ft, ok := fieldByJSONName(t, k)
		if !ok {
			return path
		}
		if p := locateField(obj[k], ft, path); p != "" {
			return p
		}
	}
	return ""
}

// fieldByJSONName finds the type of the struct field encoding/json would
// decode key into (exact tag name first, then case-insensitively).
func fieldByJSONName(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}

// decodeSpec decodes and validates a submitted container spec. Validate
// checks command, env and image with the runner's own validator
// (runner.ValidateContent): what the runner would refuse is a 400 here,
// naming the field, not a container that burns its attempts.
func decodeSpec(data []byte) (view.Spec, *httpError) {
	var spec view.Spec
	if len(bytes.TrimSpace(data)) == 0 {
		return spec, badRequest("", "request body is required (a container spec)")
	}
	if herr := decodeJSON(data, &spec); herr != nil {
		return spec, herr
	}
	withDefaults(&spec)
	if err := queue.ValidateSpec(&spec); err != nil {
		return spec, classify(err)
	}
	return spec, nil
}

// DecodeSpec decodes and checks one spec as POST /v1/containers does,
// for a client to check specs before it sends them: the error is the
// message the server would answer with (unknown fields and bad values
// named).
func DecodeSpec(data []byte) (view.Spec, error) {
	spec, herr := decodeSpec(data)
	if herr != nil {
		return spec, herr
	}
	return spec, nil
}

// withDefaults fills in what a spec leaves to the API: vCPUs, as submit's
// --vcpus default does (queue.DefaultVCPUs).
func withDefaults(spec *view.Spec) {
	if spec.RuntimeConstraints.VCPUs == 0 {
		spec.RuntimeConstraints.VCPUs = queue.DefaultVCPUs
	}
}

// MaxBatchItems caps the containers of one bulk submission (a JSON array
// to POST /v1/containers); more is refused with 413, as is a body over
// MaxBodyBytes, whichever comes first. It bounds the work of one request
// and its one store transaction, and is about as many specs as fit in
// MaxBodyBytes as the Go client writes them (~190 bytes each at least). A
// client with more splits them into several requests, each all or nothing
// on its own.
const MaxBatchItems = 5000

// isJSONArray reports whether a request body is a JSON array (a bulk
// submission) rather than one object.
func isJSONArray(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '['
}

// decodeSpecs decodes and validates the specs of a bulk submission. A body
// that is not an array of JSON values is a 400 (herr). Items that do not
// decode or validate are returned in refused, in index order; specs holds
// the others at their index.
func decodeSpecs(data []byte) (specs []view.Spec, refused []ItemError, herr *httpError) {
	// The common case first: the whole array decodes at once. Its specs
	// are validated by Engine.SubmitBatch, which names every invalid one.
	if err := decodeJSON(data, &specs); err == nil {
		for i := range specs {
			withDefaults(&specs[i])
		}
		switch {
		case len(specs) == 0:
			return nil, nil, badRequest("", "an empty array submits nothing: send at least one container spec")
		case len(specs) > MaxBatchItems:
			return nil, nil, tooManyItems(len(specs))
		}
		return specs, nil, nil
	}
	// Something does not decode: find every item at fault, one by one.
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, jsonError(data, reflect.TypeOf(raw), err)
	}
	switch {
	case len(raw) == 0:
		return nil, nil, badRequest("", "an empty array submits nothing: send at least one container spec")
	case len(raw) > MaxBatchItems:
		return nil, nil, tooManyItems(len(raw))
	}
	specs = make([]view.Spec, len(raw))
	for i, item := range raw {
		spec, herr := decodeSpec(item)
		if herr != nil {
			refused = append(refused, itemError(i, herr))
			continue
		}
		specs[i] = spec
	}
	return specs, refused, nil
}

func tooManyItems(n int) *httpError {
	return &httpError{status: http.StatusRequestEntityTooLarge,
		msg: fmt.Sprintf("%d containers in one request: at most %d (split them into several requests)", n, MaxBatchItems)}
}

func itemError(index int, herr *httpError) ItemError {
	return ItemError{Index: index, Message: herr.msg, Field: herr.field, Types: herr.types}
}

// reasonBody is the optional body of a verb.
type reasonBody struct {
	Reason string `json:"reason"`
}

// priorityBody is the body of PATCH /v1/containers/{id}.
type priorityBody struct {
	Priority *int   `json:"priority"`
	Reason   string `json:"reason,omitempty"`
}

// ListSorts are the sort keys GET /v1/containers accepts (each may be
// prefixed with "-" for descending order).
var ListSorts = []string{"priority", "created", "name", "state"}

// parseListQuery reads GET /v1/containers parameters.
func parseListQuery(v url.Values) (engine.ListOptions, *httpError) {
	var o engine.ListOptions
	for _, raw := range v["state"] {
		for _, s := range strings.Split(raw, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			st, ok := parseState(s)
			if !ok {
				return o, badRequest("state", fmt.Sprintf("state: unknown state %q (Queued, Locked, Running, Complete, Cancelled)", s))
			}
			if !slices.Contains(o.States, st) {
				o.States = append(o.States, st)
			}
		}
	}
	o.Query = v.Get("q")
	if s := v.Get("sort"); s != "" {
		if !slices.Contains(ListSorts, strings.TrimPrefix(s, "-")) {
			return o, badRequest("sort", fmt.Sprintf("sort: unknown key %q (priority, created, name, state; prefix - for descending)", s))
		}
		o.Sort = s
	}
	var herr *httpError
	if o.Offset, herr = intParam(v, "offset", 0); herr != nil {
		return o, herr
	}
	if o.Limit, herr = intParam(v, "limit", 0); herr != nil {
		return o, herr
	}
	if o.Limit == 0 || o.Limit > MaxListLimit {
		o.Limit = MaxListLimit
	}
	if o.Labels, herr = parseLabelSelector(v["label"]); herr != nil {
		return o, herr
	}
	return o, nil
}

// parseLabelSelector reads the repeated label=k=v parameters of GET
// /v1/containers (every one must match); nil when there are none.
func parseLabelSelector(sels []string) (map[string]string, *httpError) {
	if len(sels) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(sels))
	for _, sel := range sels {
		k, val, ok := strings.Cut(sel, "=")
		if !ok || k == "" {
			return nil, badRequest("label", fmt.Sprintf("label: want key=value (e.g. label=gpu=a100), got %q", sel))
		}
		if prev, dup := out[k]; dup && prev != val {
			return nil, badRequest("label", fmt.Sprintf("label: %s asked for as both %q and %q; no container can match", k, prev, val))
		}
		out[k] = val
	}
	return out, nil
}

func parseState(s string) (queue.State, bool) {
	for _, st := range queue.States {
		if strings.EqualFold(s, string(st)) {
			return st, true
		}
	}
	return "", false
}

// intParam reads a non-negative integer query parameter (def when absent).
func intParam(v url.Values, name string, def int) (int, *httpError) {
	s := v.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, badRequest(name, fmt.Sprintf("%s: want a whole number, got %q", name, s))
	}
	if n < 0 {
		return 0, badRequest(name, fmt.Sprintf("%s: must not be negative, got %d", name, n))
	}
	return n, nil
}

// eventsQuery is what GET /v1/events asks for: events after Since, the
// oldest first, or with Newest the newest first (before Before, when set).
type eventsQuery struct {
	Since  uint64
	Before uint64
	Newest bool
	Limit  int
}

func parseEventsQuery(v url.Values) (eventsQuery, *httpError) {
	var q eventsQuery
	for _, p := range []struct {
		name string
		to   *uint64
	}{{"since", &q.Since}, {"before", &q.Before}} {
		if s := v.Get(p.name); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return q, badRequest(p.name, fmt.Sprintf("%s: want an event sequence number, got %q", p.name, s))
			}
			*p.to = n
		}
	}
	switch o := v.Get("order"); o {
	case "", "oldest":
		if q.Before != 0 {
			return q, badRequest("before", "before: only with order=newest")
		}
	case "newest":
		q.Newest = true
	default:
		return q, badRequest("order", fmt.Sprintf("order: want oldest or newest, got %q", o))
	}
	var herr *httpError
	if q.Limit, herr = intParam(v, "limit", 0); herr != nil {
		return q, herr
	}
	if q.Limit == 0 {
		q.Limit = 1000
	}
	q.Limit = min(q.Limit, MaxListLimit)
	return q, nil
}

// logsQuery is what GET /v1/containers/{id}/logs asks for.
type logsQuery struct {
	Tail   int
	Follow bool
}

func parseLogsQuery(v url.Values) (logsQuery, *httpError) {
	var q logsQuery
	var herr *httpError
	if q.Tail, herr = intParam(v, "tail", 0); herr != nil {
		return q, herr
	}
	if s := v.Get("follow"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return q, badRequest("follow", fmt.Sprintf("follow: want 1 or 0, got %q", s))
		}
		q.Follow = b
	}
	return q, nil
}
