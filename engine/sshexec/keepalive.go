// Keepalive requests that find a dead SSH connection.

package sshexec

import (
	"time"

	"golang.org/x/crypto/ssh"
)

// keepaliveRequest is the global request OpenSSH's own client sends
// (ServerAliveInterval). Servers that do not know it still answer with a
// failure, and any answer proves the connection alive.
const keepaliveRequest = "keepalive@openssh.com"

// keepalive sends a keepalive request on c every KeepaliveInterval until
// gone is closed (c ended). When a reply does not come within
// KeepaliveTimeout the connection is presumed dead, as after a network cut
// that closes nothing: it is dropped, which fails the calls waiting on it
// and makes the next call dial again.
func (e *Executor) keepalive(c *ssh.Client, gone <-chan struct{}) {
	tick := time.NewTicker(e.opts.KeepaliveInterval)
	defer tick.Stop()
	for {
		select {
		case <-gone:
			return
		case <-tick.C:
		}
		if !e.ping(c) {
			e.drop(c)
			return
		}
	}
}

// ping sends one keepalive request and reports whether c answered within
// KeepaliveTimeout. A request blocked on a dead connection is unblocked by
// closing it.
func (e *Executor) ping(c *ssh.Client) bool {
	late := time.AfterFunc(e.opts.KeepaliveTimeout, func() { _ = c.Close() })
	_, _, err := c.SendRequest(keepaliveRequest, true, nil)
	return late.Stop() && err == nil
}
