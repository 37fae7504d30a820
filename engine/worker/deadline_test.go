package worker

import (
	"context"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// deadlineRecorder records the deadline of the last call's context.
type deadlineRecorder struct {
	deadline time.Time
	has      bool
}

func (r *deadlineRecorder) Execute(ctx context.Context, _ string, _ []byte) ([]byte, []byte, error) {
	r.deadline, r.has = ctx.Deadline()
	return nil, nil, nil
}

func (r *deadlineRecorder) Close() error { return nil }

type sessionRecorder struct{ deadlineRecorder }

func (r *sessionRecorder) Exchange(ctx context.Context, _ string, _ []byte) ([]byte, error) {
	r.deadline, r.has = ctx.Deadline()
	return nil, nil
}

func TestWithCallDeadline(t *testing.T) {
	const limit = time.Hour
	own, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ownDeadline, _ := own.Deadline()
	for _, tc := range []struct {
		name    string
		session bool
		ctx     context.Context
		want    func(time.Time) bool
	}{
		{"no deadline gets the limit", false, context.Background(), func(d time.Time) bool { return time.Until(d) > limit-time.Minute }},
		{"own deadline kept", false, own, func(d time.Time) bool { return d.Equal(ownDeadline) }},
		{"session: no deadline gets the limit", true, context.Background(), func(d time.Time) bool { return time.Until(d) > limit-time.Minute }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec *deadlineRecorder
			var inner runner.Executor
			if tc.session {
				s := &sessionRecorder{}
				rec, inner = &s.deadlineRecorder, s
			} else {
				rec = &deadlineRecorder{}
				inner = rec
			}
			e := withCallDeadline(inner, limit)
			se, isSession := e.(runner.SessionExecutor)
			if isSession != tc.session {
				t.Fatalf("SessionExecutor: %v, want %v", isSession, tc.session)
			}
			if tc.session {
				_, _ = se.Exchange(tc.ctx, "x", nil)
			} else {
				_, _, _ = e.Execute(tc.ctx, "x", nil)
			}
			if !rec.has || !tc.want(rec.deadline) {
				t.Fatalf("deadline %v (set %v)", rec.deadline, rec.has)
			}
		})
	}
}
