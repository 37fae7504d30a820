package api

import (
	"net/http"
	"testing"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// TestErrorKindsRoundTrip: an engine error and the API's answer to it are
// of one kind: the status is that of the kind (statusOf), and the client
// reads the kind back from it, so that the console and the CLI tell a
// refused verb the same way in process and over the API.
func TestErrorKindsRoundTrip(t *testing.T) {
	e := newEnv(t)
	done := e.submit("done", []string{"true"}, 0)
	if _, err := e.eng.KillContainer(done, "test", ""); err != nil {
		t.Fatal(err)
	}
	const missing = "c-0000000000000000"
	big := 64
	for _, tc := range []struct {
		name   string
		engine func() error
		client func() error
		kind   view.Kind
		status int
	}{
		{"hold a finished container",
			func() error { _, err := e.eng.HoldContainer(done, "test", ""); return err },
			func() error { _, err := e.client.ContainerVerb(t.Context(), done, view.ContainerHold, ""); return err },
			view.KindConflict, http.StatusConflict},
		{"priority of a finished container",
			func() error { _, err := e.eng.SetPriority(done, 3, "test", ""); return err },
			func() error { _, err := e.client.SetPriority(t.Context(), done, 3); return err },
			view.KindConflict, http.StatusConflict},
		{"kill an unknown container",
			func() error { _, err := e.eng.KillContainer(missing, "test", ""); return err },
			func() error {
				_, err := e.client.ContainerVerb(t.Context(), missing, view.ContainerKill, "")
				return err
			},
			view.KindNotFound, http.StatusNotFound},
		{"drain an unknown instance",
			func() error { _, err := e.eng.DrainInstance("i-nosuch", "test", ""); return err },
			func() error {
				_, err := e.client.InstanceVerb(t.Context(), "i-nosuch", view.InstanceDrain, "")
				return err
			},
			view.KindNotFound, http.StatusNotFound},
		{"a negative priority",
			func() error { _, err := e.eng.SetPriority(done, -1, "test", ""); return err },
			func() error { _, err := e.client.SetPriority(t.Context(), done, -1); return err },
			view.KindInvalid, http.StatusBadRequest},
		{"no type fits",
			func() error {
				_, err := e.eng.Submit(view.Spec{Command: []string{"x"}, RuntimeConstraints: queue.Constraints{VCPUs: big}}, "test")
				return err
			},
			func() error {
				_, err := e.client.Submit(t.Context(), view.Spec{Command: []string{"x"}, RuntimeConstraints: queue.Constraints{VCPUs: big}})
				return err
			},
			view.KindNoFit, http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := view.KindOf(tc.engine()); k != tc.kind {
				t.Errorf("engine: kind %s, want %s", k, tc.kind)
			}
			err := tc.client()
			apiErr(t, err, tc.status)
			if k := view.KindOf(err); k != tc.kind {
				t.Errorf("client: kind %s, want %s", k, tc.kind)
			}
		})
	}
}

// TestStatusOfEveryKind: each kind has a status of its own, so that the
// client reads back the kind the server meant.
func TestStatusOfEveryKind(t *testing.T) {
	for k := view.KindOther; k <= view.KindGone; k++ {
		s, ok := statusOf[k]
		if !ok || kindOfStatus(s) != k {
			t.Errorf("kind %s: status %d (listed %v) reads back as %s", k, s, ok, kindOfStatus(s))
		}
	}
}
