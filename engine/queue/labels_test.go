package queue

import (
	"bytes"
	"strings"
	"testing"
)

// TestOldLabelsReadAsConstraints: a record an older version stored, whose
// scheduling.labels were placement, reads back with them as its
// constraints (and no metadata labels); it is written back the new way.
func TestOldLabelsReadAsConstraints(t *testing.T) {
	e := newEnv(t, nil)
	c := e.submit(Spec{Command: []string{"true"}, Scheduling: Scheduling{Constraints: map[string]string{"gpu": "a100"}}})
	e.close()
	v := e.held().records[c.Seq]
	old := bytes.Replace(v, []byte(`"constraints":`), []byte(`"labels":`), 1)
	if bytes.Equal(old, v) {
		t.Fatalf("stored record without constraints: %s", v)
	}
	e.putRecord(c.Seq, old)
	e.q = e.open()
	got := e.get(c.ID)
	wantEqual(t, "constraints", got.Scheduling.Constraints, map[string]string{"gpu": "a100"})
	wantEqual(t, "labels", got.Labels, map[string]string(nil))
	// The view has no hints; the record must.
	e.q.mu.Lock()
	has := e.q.byID.get(c.ID).HasConstraints()
	e.q.mu.Unlock()
	if !has {
		t.Error("the record's hints do not say it has constraints")
	}
}

// TestLabelsAreMetadata: top-level labels are stored and copied, checked
// as a selector can spell them, bounded in size, and independent of the
// constraints.
func TestLabelsAreMetadata(t *testing.T) {
	e := newEnv(t, nil)
	labels := map[string]string{"team": "genomics", "batch": "", "workflow": "wf-7"}
	c := e.submit(Spec{Command: []string{"true"}, Labels: labels})
	labels["team"] = "changed"
	wantEqual(t, "labels", e.get(c.ID).Labels, map[string]string{"team": "genomics", "batch": "", "workflow": "wf-7"})
	wantEqual(t, "constraints", e.get(c.ID).Scheduling.Constraints, map[string]string(nil))
	e.reopen()
	wantEqual(t, "labels after reopen", e.get(c.ID).Labels["workflow"], "wf-7")
	for _, tt := range []struct {
		labels map[string]string
		field  string
	}{
		{map[string]string{"": "x"}, "labels"},
		{map[string]string{"a=b": "x"}, "labels"},
		{map[string]string{"team": "a,b"}, "labels.team"},
		{map[string]string{"team": "a\x1bb"}, "labels.team"},
		{map[string]string{"big": strings.Repeat("x", MaxLabelBytes)}, "labels"},
	} {
		_, err := e.q.Submit(Spec{Command: []string{"true"}, Labels: tt.labels}, "test")
		wantFieldError(t, err, tt.field)
	}
}
