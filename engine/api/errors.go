package api

import (
	"encoding/json"
	"errors"
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
}

// httpError is an error response waiting to be written.
type httpError struct {
	status int
	msg    string
	field  string
	types  []string
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
	writeJSON(w, e.status, errorBody{Error: e.msg, Field: e.field, Types: e.types})
}

// classify maps an engine error to a response: unknown id → 404, a field
// error → 400, an illegal transition or another dispatcher's instance → 409, no type fits → 422, anything
// else → 500.
func classify(err error) *httpError {
	var he *httpError
	var fe *queue.FieldError
	var te *queue.TransitionError
	var nf *engine.NoFitError
	var uv *engine.UnknownVerbError
	var fe2 *worker.ForeignError
	switch {
	case errors.As(err, &he):
		return he
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, worker.ErrNotFound), errors.As(err, &uv):
		return notFound(err.Error())
	case errors.As(err, &fe):
		return badRequest(fe.Field, fe.Error())
	case errors.As(err, &te), errors.As(err, &fe2):
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
