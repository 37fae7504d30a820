// The endpoint's record of the requests it answered, and which client sent each.

//go:build linux

package ec2test

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// clientPrefix starts an endpoint path that names its client: a driver
// configured with URLAs(name) sends every request there, so that tests
// with several dispatchers on one endpoint tell whose each request was.
const clientPrefix = "/as/"

// Request is one API request the server answered, for assertions.
type Request struct {
	// At is when it arrived, before any injected latency.
	At     time.Time
	Client string // the name in URLAs; "" for URL
	Action string
	// Instances are the ids it named (TerminateInstances, CreateTags,
	// DeleteTags) or launched (RunInstances, filled in once known).
	Instances []string
	// ClientToken and Tags are RunInstances' (its instance tags).
	ClientToken string
	Tags        map[string]string
	// Error is the error code it was answered with; "" on success.
	Error string
}

// URLAs is the endpoint as client name sees it: the same server, its
// requests recorded with that name (Requests).
func (s *Server) URLAs(name string) string { return s.hs.URL + clientPrefix + url.PathEscape(name) }

// Requests returns the requests answered so far (those of action only,
// unless ""), in arrival order.
func (s *Server) Requests(action string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if action == "" || r.Action == action {
			c := *r
			c.Instances = slices.Clone(r.Instances)
			c.Tags = maps.Clone(r.Tags)
			out = append(out, c)
		}
	}
	return out
}

// record notes a request on arrival and returns its entry, which the
// handler completes (under s.mu).
func (s *Server) record(r *http.Request, f url.Values, at time.Time) *Request {
	client, _ := url.PathUnescape(strings.Trim(strings.TrimPrefix(r.URL.Path, clientPrefix), "/"))
	if !strings.HasPrefix(r.URL.Path, clientPrefix) {
		client = ""
	}
	req := &Request{At: at, Client: client, Action: f.Get("Action")}
	switch req.Action {
	case "RunInstances":
		req.ClientToken = f.Get("ClientToken")
		for _, m := range members(f, "TagSpecification") {
			if f.Get(m+".ResourceType") == "instance" {
				req.Tags = tagsOf(f, m+".Tag")
			}
		}
	case "TerminateInstances":
		req.Instances = list(f, "InstanceId")
	case "CreateTags", "DeleteTags":
		req.Instances = list(f, "ResourceId")
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	return req
}
