// A standby's forwarding (docs/design.md §11): every request it does not
// answer itself goes to the leader, streamed both ways, carrying the
// caller's identity under the cluster's peer secret.

package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"unicode"
)

// Headers of a forwarded request: who the standby authenticated, and the
// role it found. The leader believes them only from a request bearing the
// cluster's peer secret; from anyone else they are ignored.
const (
	ForwardedActorHeader = "X-Dispatch-Forwarded-Actor"
	ForwardedRoleHeader  = "X-Dispatch-Forwarded-Role"
)

// noLeaderRetryAfter is the Retry-After of a 503 while no leader is known,
// in seconds: a standby reads the lease again every lease_retry (1 s by
// default) and an election is decided within one lease (5 s).
const noLeaderRetryAfter = "2"

// maxForwardedActor caps a forwarded actor (a socket peer's name with its
// uid is longer than a sanitised header).
const maxForwardedActor = 128

// forward sends r, authenticated as p here, to the leader and streams its
// answer back.
func (s *server) forward(w http.ResponseWriter, r *http.Request, p principal) {
	if p.forwarded {
		// One hop only: a node that was the leader when the standby read
		// the lease, but is no longer, does not pass the request on.
		unavailable(w, "this node no longer leads the cluster: the request was not carried out; retry in a few seconds, when the standbys know the new leader")
		return
	}
	name, addr, ok := s.clusterOf.Leader(r.Context())
	if !ok {
		unavailable(w, "this node stands by and knows no leader now (an election is under way, or no node reaches the store): retry in a few seconds")
		return
	}
	target, err := url.Parse(addr)
	if err != nil || target.Host == "" || s.peerSecret == "" {
		s.log.Warn("api: cannot forward to the leader", "leader", name, "address", addr, "err", err, "peer_secret", s.peerSecret != "")
		unavailable(w, fmt.Sprintf("this node stands by but cannot forward to the leader %s at %q: check [ha] advertise on that node", name, addr))
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("Authorization", "Bearer "+s.peerSecret)
			pr.Out.Header.Set(ForwardedActorHeader, p.actor)
			pr.Out.Header.Set(ForwardedRoleHeader, p.role.String())
			pr.Out.Header.Del(ActorHeader)
		},
		Transport: s.forwardVia,
		// Streams (logs -f, watch) are passed on as they are written.
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Warn("api: the leader did not answer a forwarded request", "leader", name, "address", addr, "path", r.URL.Path, "err", err)
			writeError(w, &httpError{status: http.StatusBadGateway, msg: fmt.Sprintf(
				"this node stands by and the leader %s at %s did not answer: if it has stopped, another node leads within the lease; retry in a few seconds", name, addr)})
		},
	}
	proxy.ServeHTTP(w, r)
}

// PeerTransport carries a standby's forwarded requests
// (ServerOptions.Forward). An https leader is trusted by the certificate
// fingerprint pin returns at each new connection (the leader's, as it
// beats it into the nodes table: every node may serve its own
// self-signed certificate), not by the system's roots.
func PeerTransport(pin func() string) http.RoundTripper {
	return &http.Transport{
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			// The pin replaces the chain's check; VerifyConnection
			// checks it on every handshake.
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				p := pin()
				if p == "" {
					return errors.New("the leader's certificate fingerprint is not known yet: it is read from the nodes table every lease_retry")
				}
				want, err := ParseFingerprint(p)
				if err != nil {
					return err
				}
				return checkPin(cs, want)
			},
		},
	}
}

func unavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", noLeaderRetryAfter)
	writeError(w, &httpError{status: http.StatusServiceUnavailable, msg: msg})
}

// forwardedPrincipal is the caller a peer node vouches for, from its
// headers; false when it names none (the peer then gets 403).
func forwardedPrincipal(r *http.Request) (principal, bool) {
	who := strings.TrimSpace(r.Header.Get(ForwardedActorHeader))
	role, err := ParseRole(r.Header.Get(ForwardedRoleHeader))
	if who == "" || err != nil || len(who) > maxForwardedActor || strings.IndexFunc(who, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return principal{}, false
	}
	return principal{actor: who, role: role, forwarded: true}, true
}
