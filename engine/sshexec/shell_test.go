package sshexec

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud/sshserver"
	"dispatch-tui/engine/enginetest/wait"

	"golang.org/x/crypto/ssh"
)

// syncBuffer is a bytes.Buffer safe to read while the session writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A shell on a terminal, over the executor's connection, on the local
// driver's SSH server: what is typed runs, its output comes back, and
// the shell's exit ends the call without an error.
func TestShellOnTerminal(t *testing.T) {
	host, client := newEd25519Signer(t), newEd25519Signer(t)
	srv, err := sshserver.Start(sshserver.Config{HostKey: host, ClientKeys: []ssh.PublicKey{client.PublicKey()}, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	e := New(Options{Address: srv.Addr(), User: "test", Signer: client, HostKeyCallback: Pinned(host.PublicKey()), CommandTimeout: 20 * time.Second})
	t.Cleanup(func() { e.Close() })
	inR, inW := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- e.Shell(context.Background(), "xterm", 80, 24, inR, &out) }()
	io.WriteString(inW, "echo hi-$((40+2)); tty; exit 3\n")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shell: %v\noutput:\n%s", err, out.String())
		}
	case <-time.After(wait.Budget(30 * time.Second)):
		t.Fatalf("the shell did not exit; output:\n%s", out.String())
	}
	inW.Close()
	got := out.String()
	if !strings.Contains(got, "hi-42") || !strings.Contains(got, "/dev/pts/") {
		t.Errorf("shell output lacks hi-42 or its terminal:\n%s", got)
	}
}
