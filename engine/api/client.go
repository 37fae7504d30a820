// The API's Go client, used by the CLI and the attached console.

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"strconv"
	"strings"

	"dispatch-tui/engine/view"
)

// Client talks to a dispatcher's management API.
type Client struct {
	BaseURL string // "http://host:port"
	// Socket is the unix socket requests go to ("" = BaseURL's host).
	Socket string
	Token  string       // bearer token; "" sends none
	HTTP   *http.Client // nil = http.DefaultClient
	// Actor, when set, is sent as X-Dispatch-Actor; a server that knows
	// who the client is (socket peer, token) records that instead.
	Actor string
	// nodes, for a client dialled with a list of servers: the fields
	// above then describe the first; requests go to nodes' current.
	nodes *failover
}

// Where names the server for messages: its socket or its URL (of a list,
// the one that answered last).
func (c *Client) Where() string {
	if c.nodes != nil {
		return c.nodes.current().Where()
	}
	if c.Socket != "" {
		return c.Socket
	}
	return c.BaseURL
}

// NewClient returns a client for baseURL ("http://host:port" or
// "host:port") that trusts the system's roots for https; Dial also takes
// sockets and pinned certificates.
func NewClient(baseURL, token string) *Client {
	baseURL = strings.TrimSpace(baseURL)
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{}}
}

// ListQuery filters, sorts and pages Containers.
type ListQuery struct {
	States []string // any of Queued, Locked, Running, Complete, Cancelled
	Q      string   // substring of id, name or command
	Sort   string   // priority, created, name, state; "-" prefix = descending
	Offset int
	Limit  int // 0 = the server's cap (10000)
	// Labels are "key=value" selectors; a container must have them all.
	Labels []string
}

// values is q as the list's query parameters, from the continue token
// cont ("" = from q.Offset).
func (q ListQuery) values(cont string) url.Values {
	v := url.Values{}
	if len(q.States) > 0 {
		v.Set("state", strings.Join(q.States, ","))
	}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	if q.Offset != 0 && cont == "" {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	for _, l := range q.Labels {
		v.Add("label", l)
	}
	if cont != "" {
		v.Set("continue", cont)
	}
	return v
}

// APIError is returned for every non-2xx response.
type APIError struct {
	Status  int
	Message string
	Field   string   // the request field at fault (400), if known
	Types   []string // the configured instance types (422: no type fits)
	// Items are the refused items of a bulk submission (422), each with
	// its index in the submitted array.
	Items []ItemError
	// fromAPI: the body was the API's error object (not, say, a web
	// server's HTML page, which is never shown).
	fromAPI bool
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// ErrorKind implements view.Kinded: the kind the server answered with,
// read back from its status (statusOf); KindOther for an answer that was
// not the API's.
func (e *APIError) ErrorKind() view.Kind {
	if !e.fromAPI {
		return view.KindOther
	}
	return kindOfStatus(e.Status)
}

// Instances lists every instance.
func (c *Client) Instances(ctx context.Context) ([]view.Instance, error) {
	var body listBody[view.Instance]
	err := c.do(ctx, http.MethodGet, "/v1/instances", nil, nil, &body)
	return body.Items, err
}

// InstanceVerb applies an instance verb (hold, drain, run or kill).
func (c *Client) InstanceVerb(ctx context.Context, id string, verb view.InstanceVerb, reason string) (view.Instance, error) {
	var v view.Instance
	err := c.do(ctx, http.MethodPost, "/v1/instances/"+url.PathEscape(id)+"/"+url.PathEscape(verb.String()), nil, reasonOf(reason), &v)
	return v, err
}

// Containers lists containers matching q, and how many match in all.
func (c *Client) Containers(ctx context.Context, q ListQuery) ([]view.Container, int, error) {
	v := q.values("")
	var body listBody[view.Container]
	err := c.do(ctx, http.MethodGet, "/v1/containers", v, nil, &body)
	n := len(body.Items)
	if body.ItemsAvailable != nil {
		n = *body.ItemsAvailable
	}
	return body.Items, n, err
}

// Container returns one container.
func (c *Client) Container(ctx context.Context, id string) (view.Container, error) {
	var v view.Container
	err := c.do(ctx, http.MethodGet, "/v1/containers/"+url.PathEscape(id), nil, nil, &v)
	return v, err
}

// Submit adds a container.
func (c *Client) Submit(ctx context.Context, spec view.Spec) (view.Container, error) {
	return c.submit(ctx, spec)
}

// submit posts one spec (a view.Spec or its JSON).
func (c *Client) submit(ctx context.Context, spec any) (view.Container, error) {
	var v view.Container
	err := c.do(ctx, http.MethodPost, "/v1/containers", nil, spec, &v)
	return v, err
}

// SubmitBatch adds several containers in one request and one store
// transaction: all of them, or (on any error) none. Each spec refused is
// listed in the *APIError's Items (HTTP 422); more than MaxBatchItems specs,
// or a body over MaxBodyBytes, is refused with 413. The containers are
// returned in the order of specs.
func (c *Client) SubmitBatch(ctx context.Context, specs []view.Spec) ([]view.Container, error) {
	return submitBatch(ctx, c, specs)
}

// submitBatch posts specs as one JSON array (never null: the server then
// says why) and checks one container came back for each.
func submitBatch[S any](ctx context.Context, c *Client, specs []S) ([]view.Container, error) {
	if specs == nil {
		specs = []S{}
	}
	var body listBody[view.Container]
	if err := c.do(ctx, http.MethodPost, "/v1/containers", nil, specs, &body); err != nil {
		return nil, err
	}
	if len(body.Items) != len(specs) {
		return body.Items, fmt.Errorf("POST /v1/containers: %d containers submitted, the server answered with %d", len(specs), len(body.Items))
	}
	return body.Items, nil
}

// ContainerVerb applies hold, release or kill to a container (priority
// is SetPriority).
func (c *Client) ContainerVerb(ctx context.Context, id string, verb view.ContainerVerb, reason string) (view.Container, error) {
	var v view.Container
	err := c.do(ctx, http.MethodPost, "/v1/containers/"+url.PathEscape(id)+"/"+url.PathEscape(verb.String()), nil, reasonOf(reason), &v)
	return v, err
}

// SetPriority changes a container's priority.
func (c *Client) SetPriority(ctx context.Context, id string, priority int) (view.Container, error) {
	var v view.Container
	err := c.do(ctx, http.MethodPatch, "/v1/containers/"+url.PathEscape(id), nil, priorityBody{Priority: &priority}, &v)
	return v, err
}

// Logs copies a container's output (its last tail lines when tail > 0) to
// w. With follow it keeps copying new output until the container has ended
// or ctx is done.
func (c *Client) Logs(ctx context.Context, id string, tail int, follow bool, w io.Writer) error {
	v := url.Values{}
	if tail > 0 {
		v.Set("tail", strconv.Itoa(tail))
	}
	if follow {
		v.Set("follow", "1")
	}
	resp, err := c.send(ctx, http.MethodGet, "/v1/containers/"+url.PathEscape(id)+"/logs", v, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("read logs of %s: %w", id, err)
	}
	return nil
}

// Types lists the configured instance types with instance counts.
func (c *Client) Types(ctx context.Context) ([]view.TypeSummary, error) {
	var body listBody[view.TypeSummary]
	err := c.do(ctx, http.MethodGet, "/v1/types", nil, nil, &body)
	return body.Items, err
}

// Events returns up to limit events after sequence number since (limit 0 =
// the server's default, 1000).
func (c *Client) Events(ctx context.Context, since uint64, limit int) ([]view.Event, error) {
	var body listBody[view.Event]
	err := c.do(ctx, http.MethodGet, "/v1/events", eventsParams(url.Values{}, since, limit), nil, &body)
	return body.Items, err
}

// eventsParams adds since and limit to v, each unless 0 (no bound, the
// server's default), and returns v.
func eventsParams(v url.Values, since uint64, limit int) url.Values {
	if since > 0 {
		v.Set("since", strconv.FormatUint(since, 10))
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	return v
}

// EventPage is one page of GET /v1/events?order=newest.
type EventPage struct {
	Items     []view.Event // newest first
	Available int          // events after since in all
	Before    uint64       // where the next, older page ends; 0 = none
}

// EventsNewest returns up to limit (0 = the server's default, 1000) of the
// newest events with since < seq < before (before 0 = no bound).
func (c *Client) EventsNewest(ctx context.Context, since, before uint64, limit int) (EventPage, error) {
	v := eventsParams(url.Values{"order": {"newest"}}, since, limit)
	if before > 0 {
		v.Set("before", strconv.FormatUint(before, 10))
	}
	var body listBody[view.Event]
	err := c.do(ctx, http.MethodGet, "/v1/events", v, nil, &body)
	p := EventPage{Items: body.Items, Available: len(body.Items), Before: body.Before}
	if body.ItemsAvailable != nil {
		p.Available = *body.ItemsAvailable
	}
	return p, err
}

// Summary returns counts by state, cost, quota and the paused flag.
func (c *Client) Summary(ctx context.Context) (view.Summary, error) {
	var v view.Summary
	err := c.do(ctx, http.MethodGet, "/v1/summary", nil, nil, &v)
	return v, err
}

// WhoAmI returns who the server takes this client for and its role.
func (c *Client) WhoAmI(ctx context.Context) (Identity, error) {
	var v Identity
	err := c.do(ctx, http.MethodGet, "/v1/whoami", nil, nil, &v)
	return v, err
}

// Cluster returns the cluster as the node asked sees it (each node
// answers GET /v1/cluster itself; a single dispatcher names itself the
// leader at epoch 0).
func (c *Client) Cluster(ctx context.Context) (view.Cluster, error) {
	var v view.Cluster
	err := c.do(ctx, http.MethodGet, "/v1/cluster", nil, nil, &v)
	return v, err
}

// Pause stops the scheduler starting containers and creating instances.
func (c *Client) Pause(ctx context.Context, reason string) error {
	return c.do(ctx, http.MethodPost, "/v1/scheduler/pause", nil, reasonOf(reason), nil)
}

// Resume undoes Pause.
func (c *Client) Resume(ctx context.Context, reason string) error {
	return c.do(ctx, http.MethodPost, "/v1/scheduler/resume", nil, reasonOf(reason), nil)
}

// reasonOf is the body of a verb: none without a reason.
func reasonOf(reason string) any {
	if reason == "" {
		return nil
	}
	return reasonBody{Reason: reason}
}

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (when non-nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.send(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns the response when it is 2xx; any other
// status becomes an *APIError. A client of several servers fails over.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	var data []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		data = b
	}
	if c.nodes == nil {
		return c.sendTo(ctx, c, c.Token, method, path, query, data)
	}
	return c.nodes.send(func(m *Client) (*http.Response, error) {
		return c.sendTo(ctx, m, m.Token, method, path, query, data)
	})
}

// sendTo sends one request to the server at, as c's actor with token.
func (c *Client) sendTo(ctx context.Context, at *Client, token, method, path string, query url.Values, data []byte) (*http.Response, error) {
	u := at.BaseURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if data != nil {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if c.Actor != "" {
		req.Header.Set(ActorHeader, c.Actor)
	}
	hc := at.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	ae := readAPIError(resp)
	if !ae.fromAPI {
		ae.Message = fmt.Sprintf("%s answered %s, not as a dispatcher's API does (is it a dispatch-tui daemon?)", at.Where(), resp.Status)
	}
	return nil, ae
}

func readAPIError(resp *http.Response) *APIError {
	// A refused bulk submission lists every refused item: allow for
	// MaxBatchItems of them.
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	ae := &APIError{Status: resp.StatusCode}
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error != "" {
		ae.Message, ae.Field, ae.Types, ae.Items = eb.Error, eb.Field, eb.Types, eb.Items
		ae.fromAPI = true
		return ae
	}
	ae.Message = strings.TrimSpace(string(data))
	if ae.Message == "" {
		ae.Message = http.StatusText(resp.StatusCode)
	}
	return ae
}

// UserActor names the person running this process for the event log:
// prefix + ":" + their user name (e.g. "cli:alice").
func UserActor(prefix string) string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = "unknown"
	}
	return prefix + ":" + name
}

// ContainerPage is one page of GET /v1/containers.
type ContainerPage struct {
	Items     []view.Container
	Costs     []float64 // what each of Items has cost so far, in dollars
	Available int       // items_available: how many match in all
	Continue  string    // the continue token for the next page; "" = no more
}

// ListContainerPage gets one page of the containers q selects, from the
// continue token cont of the previous page ("" = the first page, at
// q.Offset).
func (c *Client) ListContainerPage(ctx context.Context, q ListQuery, cont string) (ContainerPage, error) {
	v := q.values(cont)
	resp, err := c.send(ctx, http.MethodGet, "/v1/containers", v, nil)
	if err != nil {
		return ContainerPage{}, err
	}
	defer resp.Body.Close()
	var body listBody[ContainerItem]
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return ContainerPage{}, fmt.Errorf("GET /v1/containers: decode response: %w", err)
	}
	p := ContainerPage{Items: make([]view.Container, len(body.Items)), Costs: make([]float64, len(body.Items)),
		Available: len(body.Items), Continue: resp.Header.Get(ContinueHeader)}
	for i, it := range body.Items {
		p.Items[i], p.Costs[i] = it.Container, it.Cost
	}
	if body.ItemsAvailable != nil {
		p.Available = *body.ItemsAvailable
	}
	return p, nil
}

// SubmitJSON adds a container from a spec already encoded as a JSON
// object, passing on fields this client's view.Spec may not know.
func (c *Client) SubmitJSON(ctx context.Context, spec json.RawMessage) (view.Container, error) {
	return c.submit(ctx, spec)
}

// SubmitBatchJSON is SubmitBatch for specs already in JSON (as the CLI
// reads them from a file): one request, stored all or nothing.
func (c *Client) SubmitBatchJSON(ctx context.Context, specs []json.RawMessage) ([]view.Container, error) {
	return submitBatch(ctx, c, specs)
}
