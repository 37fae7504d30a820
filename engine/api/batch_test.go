package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"dispatch-tui/engine"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// stored is how many containers the engine holds.
func (e *apiEnv) stored() int {
	_, n := e.eng.Containers(engine.ListOptions{})
	return n
}

func TestSubmitBatch(t *testing.T) {
	e := newEnv(t)
	prio := 5
	specs := []view.Spec{
		{Name: "a", Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1}},
		{Name: "b", Command: []string{"echo", "hi"}, Priority: &prio},
		{Name: "c", Command: []string{"true"}, RuntimeConstraints: queue.Constraints{RAM: gib}},
	}
	cs, err := e.client.SubmitBatch(t.Context(), specs)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(specs) {
		t.Fatalf("%d containers returned, want %d", len(cs), len(specs))
	}
	for i, c := range cs {
		if c.Name != specs[i].Name || c.State != queue.Queued {
			t.Errorf("container %d: name %q state %s, want %q Queued", i, c.Name, c.State, specs[i].Name)
		}
		got, ok := e.eng.Container(c.ID)
		if !ok || got.Name != c.Name {
			t.Errorf("container %d (%s) not stored as returned: %+v", i, c.ID, got)
		}
	}
	if cs[1].Priority != 5 {
		t.Errorf("priority of b = %d, want 5", cs[1].Priority)
	}
	if n := e.stored(); n != 3 {
		t.Errorf("%d containers stored, want 3", n)
	}
	evs, err := e.client.Events(t.Context(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	submits := 0
	for _, ev := range evs {
		if ev.Kind == "verb" && ev.Action == "submit" {
			submits++
			if ev.Actor != "token:default" {
				t.Errorf("submit event actor %q", ev.Actor)
			}
		}
	}
	if submits != 3 {
		t.Errorf("%d submit events, want 3", submits)
	}
}

// TestSubmitBatchRefused: a bulk submission with any bad item stores
// nothing; the 422 names every bad item by index.
func TestSubmitBatchRefused(t *testing.T) {
	e := newEnv(t)
	ok := `{"command":["true"]}`
	type item struct {
		index int
		field string
		msg   string // substring of the item's error
		types int
	}
	tooMany := "[" + strings.TrimSuffix(strings.Repeat(ok+",", MaxBatchItems+1), ",") + "]"
	tooBig := "[" + ok + `,{"command":["x"],"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}]`
	for _, tc := range []struct {
		name  string
		body  string
		want  int
		msg   string // substring of the top-level error
		items []item
	}{
		{"one bad field among good", "[" + ok + `,{"command":["x"],"colour":"blue"},` + ok + "]", 422,
			"1 of 3 containers refused, nothing submitted: container 1: colour: unknown field",
			[]item{{1, "colour", "unknown field", 0}}},
		{"several bad items", `[{"command":[]},` + ok + `,{"command":["x"],"runtime_constraints":{"vcpus":64}},{"command":["x"],"runtime_constraints":{"ram":-1}}]`, 422,
			"3 of 4 containers refused", []item{
				{0, "command", "", 0},
				{2, "", "no instance type fits", 2},
				{3, "runtime_constraints.ram", "must not be negative", 0},
			}},
		{"an item not an object", "[" + ok + `,7]`, 422, "container 1", []item{{1, "", "", 0}}},
		{"an item of the wrong type", `[{"command":"echo hi"}]`, 422, "", []item{{0, "command", "want an array", 0}}},
		{"leading whitespace", " \n\t[" + ok + `,{"command":["x"],"restart_policy":"always"}]`, 422, "", []item{{1, "restart_policy", "", 0}}},
		{"empty array", `[]`, 400, "at least one container", nil},
		{"malformed array", "[" + ok + ",", 400, "malformed JSON", nil},
		{"trailing data", "[" + ok + "] []", 400, "malformed JSON", nil},
		{"too many items", tooMany, 413, fmt.Sprintf("at most %d", MaxBatchItems), nil},
		{"body over 1 MiB", tooBig, 413, "1 MiB", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := e.req(t, "POST", "/v1/containers", strings.NewReader(tc.body), nil)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.want, data)
			}
			var eb errorBody
			if err := json.Unmarshal(data, &eb); err != nil || eb.Error == "" {
				t.Fatalf("error body %.300q: %v", data, err)
			}
			if !strings.Contains(eb.Error, tc.msg) {
				t.Errorf("message %q does not contain %q", eb.Error, tc.msg)
			}
			if len(eb.Items) != len(tc.items) {
				t.Fatalf("items %+v, want %d", eb.Items, len(tc.items))
			}
			for i, want := range tc.items {
				got := eb.Items[i]
				if got.Index != want.index || got.Field != want.field || len(got.Types) != want.types ||
					!strings.Contains(got.Message, want.msg) || got.Message == "" {
					t.Errorf("item %d = %+v, want index %d field %q types %d message containing %q",
						i, got, want.index, want.field, want.types, want.msg)
				}
			}
			if n := e.stored(); n != 0 {
				t.Fatalf("%d containers stored by a refused submission", n)
			}
		})
	}
}

// TestClientSubmitBatchErrors: the client hands over the per-item errors
// and the size limits.
func TestClientSubmitBatchErrors(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	good := view.Spec{Command: []string{"true"}}
	_, err := e.client.SubmitBatch(ctx, []view.Spec{good, {Command: []string{"x"}, RuntimeConstraints: queue.Constraints{VCPUs: 64}}, good, {}})
	ae := apiErr(t, err, http.StatusUnprocessableEntity)
	if len(ae.Items) != 2 || ae.Items[0].Index != 1 || len(ae.Items[0].Types) != 2 || ae.Items[1].Index != 3 || ae.Items[1].Field != "command" {
		t.Fatalf("items = %+v", ae.Items)
	}
	if got := ae.Items[1].Error(); !strings.HasPrefix(got, "container 3: command") {
		t.Errorf("item error %q", got)
	}

	many := make([]view.Spec, MaxBatchItems+1)
	for i := range many {
		many[i] = good
	}
	_, err = e.client.SubmitBatch(ctx, many)
	apiErr(t, err, http.StatusRequestEntityTooLarge)

	_, err = e.client.SubmitBatch(ctx, nil)
	apiErr(t, err, http.StatusBadRequest)

	if n := e.stored(); n != 0 {
		t.Fatalf("%d containers stored by refused submissions", n)
	}
	// The limit itself is accepted.
	cs, err := e.client.SubmitBatch(ctx, many[:MaxBatchItems])
	if err != nil || len(cs) != MaxBatchItems {
		t.Fatalf("%d containers, %v; want %d", len(cs), err, MaxBatchItems)
	}
	if n := e.stored(); n != MaxBatchItems {
		t.Fatalf("%d containers stored, want %d", n, MaxBatchItems)
	}
}
