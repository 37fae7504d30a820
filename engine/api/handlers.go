// The handlers of the list, submit and verb routes.

package api

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"dispatch-tui/engine"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// listBody is every list response: {"items": [...]} (items_available for
// containers).
type listBody[T any] struct {
	Items          []T  `json:"items"`
	ItemsAvailable *int `json:"items_available,omitempty"`
	// Before is, for events newest first, where the next (older) page
	// ends: pass it as before.
	Before uint64 `json:"before,omitempty"`
}

func items[T any](v []T) listBody[T] {
	if v == nil {
		v = []T{}
	}
	return listBody[T]{Items: v}
}

func (s *server) listInstances(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, badRequest("", "malformed query string: "+err.Error()))
		return
	}
	if q.Has("changed_since") {
		s.listInstanceChanges(w, r, q)
		return
	}
	writeJSON(w, http.StatusOK, items(s.eng.Instances()))
}

func (s *server) instanceVerb(w http.ResponseWriter, r *http.Request) {
	id, verb := r.PathValue("id"), r.PathValue("verb")
	var body reasonBody
	if herr := decodeBody(w, r, &body, false); herr != nil {
		writeError(w, herr)
		return
	}
	v, err := view.ParseInstanceVerb(verb)
	if err != nil {
		writeError(w, classify(err))
		return
	}
	iv, err := s.eng.ApplyInstanceVerb(id, v, actor(r), body.Reason)
	if err != nil {
		writeError(w, classify(err))
		return
	}
	writeJSON(w, http.StatusOK, iv)
}

func (s *server) listContainers(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, badRequest("", "malformed query string: "+err.Error()))
		return
	}
	if q.Has("changed_since") {
		s.listChanges(w, r, q)
		return
	}
	opts, herr := parseListQuery(q)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if pagedList(q) {
		s.listContainersPaged(w, q, opts)
		return
	}
	cs, total := s.eng.Containers(opts)
	body := items(s.withCosts(cs))
	body.ItemsAvailable = &total
	writeJSON(w, http.StatusOK, body)
}

func (s *server) submit(w http.ResponseWriter, r *http.Request) {
	data, herr := readBody(w, r)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if isJSONArray(data) {
		s.submitBatch(w, r, data)
		return
	}
	spec, herr := decodeSpec(data)
	if herr != nil {
		writeError(w, herr)
		return
	}
	c, err := s.eng.Submit(spec, actor(r))
	if err != nil {
		writeError(w, classify(err))
		return
	}
	w.Header().Set("Location", "/v1/containers/"+url.PathEscape(c.ID))
	writeJSON(w, http.StatusCreated, c)
}

// submitBatch stores the specs of a JSON array in one store transaction,
// all or nothing: 201 with every container, or 422 naming each refused
// item (its decode, validation or fit error) with nothing stored.
func (s *server) submitBatch(w http.ResponseWriter, r *http.Request, data []byte) {
	specs, refused, herr := decodeSpecs(data)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if len(refused) > 0 {
		// Name every refused item at once, those that decoded but fit no
		// type too, so that one round trip finds them all.
		bad := make(map[int]bool, len(refused))
		for _, it := range refused {
			bad[it.Index] = true
		}
		for i := range specs {
			if err := s.eng.CheckSubmit(specs[i]); !bad[i] && err != nil {
				refused = append(refused, itemError(i, classify(err)))
			}
		}
		slices.SortFunc(refused, func(a, b ItemError) int { return cmp.Compare(a.Index, b.Index) })
		writeError(w, refusedItems(len(specs), refused))
		return
	}
	cs, err := s.eng.SubmitBatch(specs, actor(r))
	var be *engine.BatchError
	switch {
	case errors.As(err, &be):
		for _, it := range be.Items {
			refused = append(refused, itemError(it.Index, classify(it.Err)))
		}
		writeError(w, refusedItems(len(specs), refused))
	case err != nil:
		writeError(w, classify(err))
	default:
		writeJSON(w, http.StatusCreated, items(cs))
	}
}

func (s *server) getContainer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, ok := s.eng.Container(id)
	if !ok {
		writeError(w, containerNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, s.withCosts([]view.Container{c})[0])
}

func containerNotFound(id string) *httpError {
	return notFound(fmt.Sprintf("container %s: %v", id, queue.ErrNotFound))
}

func (s *server) containerVerb(w http.ResponseWriter, r *http.Request) {
	id, verb := r.PathValue("id"), r.PathValue("verb")
	var body reasonBody
	if herr := decodeBody(w, r, &body, false); herr != nil {
		writeError(w, herr)
		return
	}
	v, err := view.ParseContainerVerb(verb)
	if err == nil && v.TakesValue() {
		err = notFound(fmt.Sprintf("%s takes a value: PATCH /v1/containers/%s with {\"priority\": N}", v, id))
	}
	if err != nil {
		writeError(w, classify(err))
		return
	}
	writeVerbResult(w)(s.eng.ApplyContainerVerb(id, v, actor(r), body.Reason))
}

func (s *server) patchContainer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body priorityBody
	if herr := decodeBody(w, r, &body, true); herr != nil {
		writeError(w, herr)
		return
	}
	if body.Priority == nil {
		writeError(w, badRequest("priority", "priority: required (the only field PATCH changes)"))
		return
	}
	writeVerbResult(w)(s.eng.SetPriority(id, *body.Priority, actor(r), body.Reason))
}

// writeVerbResult writes a container verb's result: the container, or its
// error by kind (an unknown id 404, a finished container 409).
func writeVerbResult(w http.ResponseWriter) func(view.Container, error) {
	return func(c view.Container, err error) {
		if err != nil {
			writeError(w, classify(err))
			return
		}
		writeJSON(w, http.StatusOK, c)
	}
}

func (s *server) types(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, items(s.eng.Types()))
}

func (s *server) events(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, badRequest("", "malformed query string: "+err.Error()))
		return
	}
	eq, herr := parseEventsQuery(q)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if eq.Newest {
		p, err := s.eng.EventsNewest(eq.Since, eq.Before, eq.Limit)
		if err != nil {
			writeError(w, classify(err))
			return
		}
		body := items(p.Items)
		body.ItemsAvailable, body.Before = &p.Total, p.Before
		writeJSON(w, http.StatusOK, body)
		return
	}
	evs, err := s.eng.Events(eq.Since, eq.Limit)
	if err != nil {
		writeError(w, classify(err))
		return
	}
	writeJSON(w, http.StatusOK, items(evs))
}

func (s *server) summary(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.eng.Summary())
}

// schedulerBody is the answer to POST /v1/scheduler/pause|resume.
type schedulerBody struct {
	Paused bool `json:"paused"`
}

func (s *server) schedulerVerb(w http.ResponseWriter, r *http.Request) {
	verb := r.PathValue("verb")
	var do func(actor, reason string) error
	switch verb {
	case "pause":
		do = s.eng.Pause
	case "resume":
		do = s.eng.Resume
	default:
		writeError(w, notFound(fmt.Sprintf("unknown scheduler verb %q (pause, resume)", verb)))
		return
	}
	var body reasonBody
	if herr := decodeBody(w, r, &body, false); herr != nil {
		writeError(w, herr)
		return
	}
	if err := do(actor(r), body.Reason); err != nil {
		writeError(w, classify(err))
		return
	}
	writeJSON(w, http.StatusOK, schedulerBody{Paused: verb == "pause"})
}
