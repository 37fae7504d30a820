// No interactive shells where pseudo terminals are opened only the Linux way.

//go:build unix && !linux

package sshserver

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// ptyRequest is the payload of "pty-req" (RFC 4254 §6.2).
type ptyRequest struct {
	Term                 string
	Cols, Rows, PxW, PxH uint32
	Modes                string
}

// startShell: pseudo terminals are opened the Linux way only.
func (s *Server) startShell(ch ssh.Channel, _ ptyRequest, _ []string, done chan struct{}) int {
	fmt.Fprintf(ch.Stderr(), "dispatch-tui sshserver: cannot start a shell: %v\n", errors.New("no pseudo terminals on this system"))
	finish(ch, exitStatusPayload(127))
	close(done)
	return 0
}
