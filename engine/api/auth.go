// Who a request comes from: roles, tokens, the peer of a unix socket, the actor of a verb.

package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os/user"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Role is what a client may do: a viewer reads (lists, logs, events,
// metrics); an operator also applies verbs and submits.
type Role int

const (
	// roleUnset marks a route registered without a role: the server
	// refuses such a route to everyone (and a test fails on it).
	roleUnset Role = iota
	// rolePublic routes answer without authentication.
	rolePublic
	RoleViewer
	RoleOperator
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	}
	return "none"
}

// ParseRole reads "viewer" or "operator".
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return RoleViewer, nil
	case "operator":
		return RoleOperator, nil
	}
	return roleUnset, fmt.Errorf("unknown role %q (viewer, operator)", s)
}

// Token is one bearer token a TCP client may present.
type Token struct {
	Name   string // recorded as the actor "token:<name>"
	Role   Role
	Secret string
}

// hashedToken keeps only the secret's hash, so that comparing takes the
// same time whatever the length of what a client sends.
type hashedToken struct {
	name string
	role Role
	hash [sha256.Size]byte
}

// principal is who sent a request, as far as the server can tell.
type principal struct {
	actor string
	role  Role
	// forwarded: a standby of the cluster vouches for this caller.
	forwarded bool
}

// Peer is the process at the other end of a unix socket connection, from
// the kernel (SO_PEERCRED): it cannot be forged by the client.
type Peer struct {
	UID, GID uint32
	PID      int32
}

// Actor names the peer for the event log: "uid:1001(alice)".
func (p Peer) Actor() string {
	uid := strconv.FormatUint(uint64(p.UID), 10)
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		return "uid:" + uid + "(" + sanitizeActor(u.Username) + ")"
	}
	return "uid:" + uid
}

type peerKey struct{}

// PeerContext is an http.Server's ConnContext for a unix socket listener:
// it records the connecting process's credentials on the connection's
// context, where the server finds them for each request. A connection
// whose credentials cannot be read gets none, and is then treated as a
// client without a token.
func PeerContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := unwrapUnix(c)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid})
}

// unwrapUnix finds the *net.UnixConn under a connection wrapped by a
// limiting listener.
func unwrapUnix(c net.Conn) (*net.UnixConn, bool) {
	for {
		switch v := c.(type) {
		case *net.UnixConn:
			return v, true
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil, false
		}
	}
}

// PeerFrom returns the socket peer recorded by PeerContext, if any.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// authenticate finds who sent r: a socket peer the server accepts (an
// operator: the socket's file mode is the boundary), else the holder of a
// bearer token. Without any token configured and no peer, the request is
// anonymous and may do anything: only tests serve so (the daemon refuses a
// TCP listener without tokens). On failure it writes 401 or 403.
func (s *server) authenticate(w http.ResponseWriter, r *http.Request) (principal, bool) {
	if p, ok := PeerFrom(r.Context()); ok {
		if s.socketPeer != nil && !s.socketPeer(p) {
			writeError(w, &httpError{status: http.StatusForbidden, msg: fmt.Sprintf("uid %d may not use this socket", p.UID)})
			return principal{}, false
		}
		return principal{actor: p.Actor(), role: RoleOperator}, true
	}
	if len(s.tokens) == 0 && s.peerSecret == "" {
		return principal{actor: anonymousActor(r), role: RoleOperator}, true
	}
	auth := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(auth, " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dispatch-tui"`)
		writeError(w, &httpError{status: http.StatusUnauthorized, msg: "authentication required: send Authorization: Bearer <token>"})
		return principal{}, false
	}
	got := sha256.Sum256([]byte(tok))
	var match *hashedToken
	// Compare with every token, without stopping at a match, so that the
	// time taken says nothing about which one matched.
	for i := range s.tokens {
		if subtle.ConstantTimeCompare(got[:], s.tokens[i].hash[:]) == 1 {
			match = &s.tokens[i]
		}
	}
	if s.peerSecret != "" && subtle.ConstantTimeCompare(got[:], s.peerHash[:]) == 1 {
		p, ok := forwardedPrincipal(r)
		if !ok {
			writeError(w, &httpError{status: http.StatusForbidden, msg: "a forwarded request must name its caller and role (" + ForwardedActorHeader + ", " + ForwardedRoleHeader + ")"})
		}
		return p, ok
	}
	if match == nil {
		writeError(w, &httpError{status: http.StatusForbidden, msg: "invalid token"})
		return principal{}, false
	}
	return principal{actor: "token:" + match.name, role: match.role}, true
}

// anonymousActor is "api", or "api:" + the sanitised X-Dispatch-Actor
// header: what an unauthenticated server records.
func anonymousActor(r *http.Request) string {
	v := sanitizeActor(r.Header.Get(ActorHeader))
	if v == "" {
		return "api"
	}
	return "api:" + v
}

type principalKey struct{}

// actor names who performs a verb: the authenticated principal.
func actor(r *http.Request) string {
	if p, ok := r.Context().Value(principalKey{}).(principal); ok {
		return p.actor
	}
	return anonymousActor(r)
}
