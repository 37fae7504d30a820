package worker

import (
	"context"
	"io"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
)

// shellOnly is an executor with every side an executor may have, and a
// shell that says it ran.
type shellOnly struct{}

func (shellOnly) Execute(context.Context, string, []byte) ([]byte, []byte, error) {
	return nil, nil, nil
}
func (shellOnly) Close() error { return nil }
func (shellOnly) Shell(_ context.Context, _ string, _, _ int, _ io.Reader, out io.Writer) error {
	_, err := io.WriteString(out, "shell ran")
	return err
}

type shellSession struct{ shellOnly }

func (shellSession) Exchange(context.Context, string, []byte) ([]byte, error) { return nil, nil }

type shellWatch struct{ shellOnly }

func (shellWatch) Watch(context.Context, string, func([]byte)) error { return nil }

type shellSessionWatch struct{ shellSession }

func (shellSessionWatch) Watch(context.Context, string, func([]byte)) error { return nil }

// TestShellUnderEveryDeadlineWrapper: the shell is found under the call
// deadlines whatever sides (session, watch) the executor keeps.
func TestShellUnderEveryDeadlineWrapper(t *testing.T) {
	for name, e := range map[string]runner.Executor{
		"plain": shellOnly{}, "session": shellSession{}, "watch": shellWatch{}, "session+watch": shellSessionWatch{},
	} {
		wrapped := withCallDeadline(e, newCallWatch(clock.Real{}), time.Minute)
		b, ok := wrapped.(interface{ unbounded() runner.Executor })
		if !ok {
			t.Errorf("%s: %T does not give its executor back", name, wrapped)
			continue
		}
		if _, ok := b.unbounded().(runner.ShellExecutor); !ok {
			t.Errorf("%s: no shell under %T", name, wrapped)
		}
	}
}
