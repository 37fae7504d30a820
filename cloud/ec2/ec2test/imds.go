// Each test instance's metadata service: IMDSv2 tokens and the spot interruption notice.

//go:build linux

package ec2test

// Each instance's metadata service, as much of it as the driver reads:
// IMDSv2 session tokens and the spot interruption notice. An instance's
// login sessions find it through ec2.IMDSEndpointEnv, the instances all
// sharing this host.

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// imdsPrefix starts the path of an instance's metadata service on the
// endpoint: <prefix><instance id>/latest/...
const imdsPrefix = "/imds/"

func (s *Server) serveIMDS(w http.ResponseWriter, r *http.Request) {
	id, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, imdsPrefix), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil || in.state != stateRunning && in.state != statePending {
		http.Error(w, "no such instance", http.StatusNotFound)
		return
	}
	switch {
	case path == "latest/api/token" && r.Method == http.MethodPut:
		if r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
			http.Error(w, "missing X-aws-ec2-metadata-token-ttl-seconds", http.StatusBadRequest)
			return
		}
		b := make([]byte, 16)
		rand.Read(b)
		in.imdsToken = hex.EncodeToString(b)
		w.Write([]byte(in.imdsToken))
	case r.Method != http.MethodGet:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case !in.imdsv2 && r.Header.Get("X-aws-ec2-metadata-token") == "":
		s.serveMetadata(w, in, path) // IMDSv1 allowed
	case in.imdsToken == "" || r.Header.Get("X-aws-ec2-metadata-token") != in.imdsToken:
		// IMDSv2: no valid token, no answer.
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	default:
		s.serveMetadata(w, in, path)
	}
}

// serveMetadata answers a metadata read; s.mu held.
func (s *Server) serveMetadata(w http.ResponseWriter, in *instance, path string) {
	switch path {
	case "latest/meta-data/spot/instance-action":
		in.noticeReads++
		if in.notice == "" {
			http.Error(w, "not found", http.StatusNotFound) // no notice posted
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(in.notice))
	case "latest/meta-data/instance-id":
		w.Write([]byte(in.id))
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}
