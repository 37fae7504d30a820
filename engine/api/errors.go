// Error responses: their JSON and the HTTP status of each kind of error.

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"dispatch-tui/engine"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
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

// classify maps an engine error to a response: unknown id → 404, a field
// error → 400, an illegal transition, a verb on a finished container or another
// dispatcher's instance → 409, no type fits → 422, anything
// else → 500.
func classify(err error) *httpError {
	var he *httpError
	var fe *queue.FieldError
	var te *queue.TransitionError
	var nf *engine.NoFitError
	var uv *engine.UnknownVerbError
	var fe2 *worker.ForeignError
	var fin *queue.FinalError
	var sd *engine.ShuttingDownError
	switch {
	case errors.As(err, &he):
		return he
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, worker.ErrNotFound), errors.As(err, &uv):
		return notFound(err.Error())
	case errors.As(err, &fe):
		return badRequest(fe.Field, fe.Error())
	case errors.Is(err, engine.ErrEmptySelector):
		return badRequest("selector", err.Error())
	case errors.As(err, &te), errors.As(err, &fe2), errors.As(err, &fin), errors.As(err, &sd):
		return &httpError{status: http.StatusConflict, msg: err.Error()}
	case errors.As(err, &nf):
		types := nf.Types
		if types == nil {
			types = []string{}
		}
		return &httpError{status: http.StatusUnprocessableEntity, msg: err.Error(), types: types}
	}
	return &httpError{status: http.StatusInternalServerError, msg: err.Error()}
}
