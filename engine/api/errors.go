// Error responses: their JSON and the HTTP status of each kind of error.

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"dispatch-tui/engine"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// errorBody is the JSON of every error response.
type errorBody struct {
	Error string   `json:"error"`
	Field string   `json:"field,omitempty"`
	Types []string `json:"types,omitempty"`
	// Items are the refused items of a bulk submission (422), by index.
	Items []ItemError `json:"items,omitempty"`
}

// ItemError is why one item of a bulk submission (POST /v1/containers
// with a JSON array) was refused. Nothing of such a request is stored.
type ItemError struct {
	Index   int      `json:"index"` // from 0, in the submitted array
	Message string   `json:"error"`
	Field   string   `json:"field,omitempty"` // the item's field at fault, if known
	Types   []string `json:"types,omitempty"` // the configured instance types (no type fits)
}

func (e ItemError) Error() string { return fmt.Sprintf("container %d: %s", e.Index, e.Message) }

// httpError is an error response waiting to be written.
type httpError struct {
	status int
	msg    string
	field  string
	types  []string
	items  []ItemError
}

func (e *httpError) Error() string { return e.msg }

func badRequest(field, msg string) *httpError {
	return &httpError{status: http.StatusBadRequest, field: field, msg: msg}
}

func notFound(msg string) *httpError {
	return &httpError{status: http.StatusNotFound, msg: msg}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *httpError) {
	writeJSON(w, e.status, errorBody{Error: e.msg, Field: e.field, Types: e.types, Items: e.items})
}

// refusedItems is the 422 of a bulk submission of n items of which some
// were refused.
func refusedItems(n int, refused []ItemError) *httpError {
	msg := fmt.Sprintf("%d of %d containers refused, nothing submitted: %s", len(refused), n, refused[0].Error())
	if len(refused) > 1 {
		msg += fmt.Sprintf(" (and %d more, listed in items)", len(refused)-1)
	}
	return &httpError{status: http.StatusUnprocessableEntity, msg: msg, items: refused}
}

// statusOf is the one table of the status code the API answers each kind
// of engine error with (view.Kind); the client reads a status back to its
// kind through it (kindOfStatus).
var statusOf = map[view.Kind]int{
	view.KindOther:    http.StatusInternalServerError,
	view.KindInvalid:  http.StatusBadRequest,
	view.KindNotFound: http.StatusNotFound,
	view.KindConflict: http.StatusConflict,
	view.KindNoFit:    http.StatusUnprocessableEntity,
	view.KindGone:     http.StatusGone,
}

// kindOfStatus is the kind of error a status code answers (KindOther for
// one no kind has).
func kindOfStatus(status int) view.Kind {
	for k, s := range statusOf {
		if s == status {
			return k
		}
	}
	return view.KindOther
}

// classify maps an engine error to a response: the status of its kind
// (statusOf), with the field at fault for an invalid one and the
// configured types when none fits.
func classify(err error) *httpError {
	var he *httpError
	if errors.As(err, &he) {
		return he
	}
	e := &httpError{status: statusOf[view.KindOf(err)], msg: err.Error()}
	var fe *queue.FieldError
	var nf *engine.NoFitError
	switch {
	case errors.As(err, &fe):
		e.field, e.msg = fe.Field, fe.Error()
	case errors.Is(err, engine.ErrEmptySelector):
		e.field = "selector"
	case errors.As(err, &nf):
		e.types = nf.Types
		if e.types == nil {
			e.types = []string{}
		}
	}
	return e
}
