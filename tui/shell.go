// `s`: a shell on the instance under the cursor.

package tui

// `s`: a shell on the instance under the cursor, over the dispatcher's
// own SSH connection (k9s's shell). The console hands the terminal over
// (tea.Exec) and takes it back when the shell exits.

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	tea "charm.land/bubbletea/v2"
	xterm "github.com/charmbracelet/x/term"
	"github.com/muesli/cancelreader"

	"dispatch-tui/tui/backend"
)

// shellDoneMsg reports the end of a shell.
type shellDoneMsg struct {
	id  string
	err error
}

// openShell starts a shell on the cursor's instance.
func (m *Model) openShell() tea.Cmd {
	if _, ok := m.be.(backend.Sheller); !ok {
		return m.notHere("shell", "a shell is opened by the console that runs the engine, not over --connect")
	}
	if m.snapErr != nil {
		return m.setFlash("shell: not connected ("+m.snapErr.Error()+")", true)
	}
	id := m.table().Cursor()
	if id == "" {
		return m.notHere("shell", "no row selected")
	}
	return tea.Exec(m.shellCommand(id), func(err error) tea.Msg { return shellDoneMsg{id: id, err: err} })
}

// shellCommand is what `s` runs for instance id (nil without a Sheller).
func (m *Model) shellCommand(id string) *shellExec {
	sh, _ := m.be.(backend.Sheller)
	return &shellExec{be: sh, ctx: m.ctx, id: id}
}

func (m *Model) onShellDone(msg shellDoneMsg) tea.Cmd {
	if msg.err != nil {
		return tea.Batch(m.setFlash("shell on "+msg.id+": "+msg.err.Error(), true), m.startFetch())
	}
	return tea.Batch(m.setFlash("shell on "+msg.id+" closed", false), m.startFetch())
}

// shellExec is the shell as a tea.ExecCommand: Bubble Tea gives it the
// terminal (restored to cooked mode), it puts it in raw mode so that
// every key goes to the remote terminal, and back when the shell exits.
type shellExec struct {
	be  backend.Sheller
	ctx context.Context
	id  string
	in  io.Reader
	out io.Writer
}

func (x *shellExec) SetStdin(r io.Reader)  { x.in = r }
func (x *shellExec) SetStdout(w io.Writer) { x.out = w }
func (x *shellExec) SetStderr(io.Writer)   {}

func (x *shellExec) Run() error {
	term, cols, rows := os.Getenv("TERM"), 80, 24
	if term == "" {
		term = "xterm"
	}
	in := x.in
	if f, ok := x.in.(*os.File); ok && xterm.IsTerminal(f.Fd()) {
		if st, err := xterm.MakeRaw(f.Fd()); err == nil {
			defer xterm.Restore(f.Fd(), st)
		}
		if o, ok := x.out.(*os.File); ok {
			if w, h, err := xterm.GetSize(o.Fd()); err == nil {
				cols, rows = w, h
			}
		}
		// Stopped when the shell ends: the console reads the terminal
		// again, and no key typed then goes to the closed session.
		if cr, err := cancelreader.NewReader(f); err == nil {
			sr := &stoppableReader{cr: cr}
			defer sr.stop()
			in = sr
		}
	}
	fmt.Fprintf(x.out, "\r\ndispatch-tui: shell on %s; exit it to return to the console\r\n", x.id)
	return x.be.Shell(x.ctx, x.id, term, cols, rows, in, x.out)
}

// stoppableReader is the terminal as the shell's session reads it. The
// session's reading goroutine outlives the shell, blocked in a Read: stop
// cancels that Read and waits for it to return before closing the
// cancel reader (closed under a waiting Read, it missed the cancel and
// took the next key from the console).
type stoppableReader struct {
	mu      sync.Mutex // held by a Read for its duration
	cr      cancelreader.CancelReader
	stopped bool
}

func (s *stoppableReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, io.EOF
	}
	return s.cr.Read(p)
}

func (s *stoppableReader) stop() {
	s.cr.Cancel()
	s.mu.Lock() // the pending Read has returned
	defer s.mu.Unlock()
	s.stopped = true
	s.cr.Close()
}
