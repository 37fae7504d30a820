// Several addresses for one cluster (--connect a,b and --server a,b): a
// request goes to the address that last answered, and on to the next
// when it cannot be reached (docs/design.md §11).

package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
)

// SplitServers reads a comma-separated list of servers, dropping blanks.
func SplitServers(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// failover is the addresses of a client dialled with a list: each a
// client of its own (its URL or socket, transport and token).
type failover struct {
	members []*Client
	cur     atomic.Int32 // the member that answered last
}

// current is the member requests go to first.
func (f *failover) current() *Client { return f.members[f.cur.Load()] }

// UnreachableError is a request no address of the list could be sent to.
type UnreachableError struct {
	Tried []string // each address, as Where names it
	Err   error    // the last address's error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("none of %s answers (last: %v)", strings.Join(e.Tried, ", "), e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// send tries each member from the current one on, moving on only when the
// request could not have reached a server (so that a submission is never
// sent twice), and remembers the member that answered.
func (f *failover) send(try func(*Client) (*http.Response, error)) (*http.Response, error) {
	start := int(f.cur.Load())
	var tried []string
	var last error
	for i := range f.members {
		k := (start + i) % len(f.members)
		m := f.members[k]
		resp, err := try(m)
		if err == nil || !unreachable(err) {
			f.cur.Store(int32(k))
			return resp, err
		}
		tried, last = append(tried, m.Where()), err
	}
	return nil, &UnreachableError{Tried: tried, Err: last}
}

// unreachable reports whether err means the request never reached a
// server: no connection could be made.
func unreachable(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist)
}
