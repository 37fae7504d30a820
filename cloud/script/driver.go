// The script driver: its options, create and list.

package script

// The driver: options, create and list.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2"
)

// Defaults for zero Options fields.
const (
	DefaultAdminUser = "dispatch-tui"
	DefaultSSHPort   = 22
	// DefaultListGrace is how long an instance create reported is listed
	// although the list command does not print it yet: a provider's
	// listing may lag its creates.
	DefaultListGrace = 5 * time.Minute
)

// Options configures a Driver. The engine's [cloud.script] section maps
// onto it (engine/launch); this package does not read the config.
type Options struct {
	// The commands, each an argv run without a shell. Create, List and
	// Destroy are required; without SetTags, tag changes (hold, drain)
	// are kept by this driver only, until the dispatcher restarts.
	Create, List, Destroy, SetTags []string
	// Env is the commands' whole environment besides the DISPATCH_TUI_*
	// variables: "NAME" passes this process's value (if set), and
	// "NAME=value" sets one.
	Env []string
	// Timeout bounds each call (required).
	Timeout time.Duration
	// Signer is the dispatcher's client key (required): its public half
	// is handed to create, and the executor logs in with it.
	Signer ssh.Signer
	// AdminUser is the account user_data creates and the dispatcher logs
	// in as.
	AdminUser string
	// SSHPort is added to an address a command reports without a port.
	SSHPort int
	// ListGrace: see DefaultListGrace.
	ListGrace time.Duration
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Driver is the script cloud.InstanceSet.
type Driver struct {
	opts Options
	log  *slog.Logger

	mu sync.Mutex
	// created holds the instances create reported until a listing shows
	// them or ListGrace passes.
	created map[cloud.InstanceID]createdInstance
	// known is the last state seen of every instance, for executors'
	// addresses.
	known map[cloud.InstanceID]*Instance
	// localTags are the tags set on instances when there is no set_tags
	// command: they replace what the listing reports.
	localTags map[cloud.InstanceID]cloud.Tags
}

type createdInstance struct {
	inst *Instance
	at   time.Time
}

var _ cloud.InstanceSet = (*Driver)(nil)

// New checks opts. It runs no command.
func New(opts Options) (*Driver, error) {
	for _, c := range []struct {
		verb string
		argv []string
	}{{VerbCreate, opts.Create}, {VerbList, opts.List}, {VerbDestroy, opts.Destroy}} {
		if len(c.argv) == 0 || c.argv[0] == "" {
			return nil, fmt.Errorf("script driver: the %s command is required: set %s in [cloud.script]", c.verb, c.verb)
		}
	}
	if len(opts.SetTags) > 0 && opts.SetTags[0] == "" {
		return nil, errors.New("script driver: set_tags names no program: leave it out or give a program")
	}
	if opts.Timeout <= 0 {
		return nil, errors.New("script driver: a timeout is required")
	}
	if opts.Signer == nil {
		return nil, errors.New("script driver: the dispatcher's client key is required")
	}
	if opts.AdminUser == "" {
		opts.AdminUser = DefaultAdminUser
	}
	if !cloud.PortableUserName(opts.AdminUser) {
		return nil, fmt.Errorf("script driver: admin user %q is not a valid user name", opts.AdminUser)
	}
	if opts.SSHPort == 0 {
		opts.SSHPort = DefaultSSHPort
	}
	if opts.ListGrace <= 0 {
		opts.ListGrace = DefaultListGrace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Driver{
		opts: opts, log: log,
		created:   make(map[cloud.InstanceID]createdInstance),
		known:     make(map[cloud.InstanceID]*Instance),
		localTags: make(map[cloud.InstanceID]cloud.Tags),
	}, nil
}

// Stop releases nothing: no command outlives its call.
func (d *Driver) Stop() {}

// env is the commands' environment from Options.Env.
func (d *Driver) env() []string {
	out := make([]string, 0, len(d.opts.Env)+2)
	for _, e := range d.opts.Env {
		if strings.Contains(e, "=") {
			out = append(out, e)
		} else if v, ok := os.LookupEnv(e); ok {
			out = append(out, e+"="+v)
		}
	}
	return out
}

// address adds the SSH port to an address without one.
func (d *Driver) address(addr string) string {
	if addr == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), strconv.Itoa(d.opts.SSHPort))
}

// Create runs the create command for one instance of type it.
func (d *Driver) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	secret := tags[cloud.TagSecret]
	if strings.ContainsAny(secret, "'\n\r\\") {
		return nil, fmt.Errorf("script driver: create %s: the instance secret has characters user_data cannot carry", it.Name)
	}
	in := createInput{
		Type: it.Name, InstanceType: it, Tags: tags,
		PublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(d.opts.Signer.PublicKey()))),
		UserData:  string(ec2.UserData(d.opts.AdminUser, d.opts.Signer.PublicKey(), secret, ec2.Scratch{})),
	}
	stdout, err := d.run(ctx, VerbCreate, it.ProviderType, in)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", it.Name, err)
	}
	var out createOutput
	if err := decodeOne(stdout, &out); err != nil {
		return nil, fmt.Errorf("script driver: create %s: the %s exited 0 but %v (an instance it made is found by list and adopted or shut down)", it.Name, d.commandName(VerbCreate), err)
	}
	if out.ID == "" {
		return nil, fmt.Errorf("script driver: create %s: the %s exited 0 but reported no id (an instance it made is found by list and adopted or shut down)", it.Name, d.commandName(VerbCreate))
	}
	if out.ProviderType == "" {
		out.ProviderType = it.ProviderType
	}
	inst := &Instance{d: d}
	inst.Init(cloud.InstanceID(out.ID), cloud.Description[struct{}]{ProviderType: out.ProviderType, Address: d.address(out.Address), Tags: tags.Clone()})
	d.mu.Lock()
	if seen := d.known[inst.ID()]; seen != nil {
		// A listing that raced with the create found it first: one
		// Instance per id, so that its address reaches the executor.
		seen.update(listLine{ProviderType: out.ProviderType, State: seen.State()}, seen.Tags(), inst.Address())
		inst = seen
	} else {
		d.known[inst.ID()] = inst
	}
	d.created[inst.ID()] = createdInstance{inst: inst, at: d.opts.Now()}
	d.mu.Unlock()
	d.log.Info("script driver: instance created", "instance", out.ID, "type", it.ProviderType, "address", inst.Address())
	return inst, nil
}

// decodeOne decodes stdout as exactly one JSON object into v.
func decodeOne(stdout []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(stdout))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("printed no JSON object on stdout (%v; it printed %s)", err, preview(stdout))
	}
	if dec.More() {
		return fmt.Errorf("printed more than one JSON object on stdout (it printed %s)", preview(stdout))
	}
	return nil
}

// preview is the start of a command's output, safe for a terminal.
func preview(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	s := string(b)
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s) // escapes what a terminal would act on
}

// Instances runs the list command and returns the instances carrying the
// dispatcher's owner tag key (any owner: the pool shows other
// dispatchers' as foreign) whose tags include filter, plus those create
// reported recently that the listing does not show yet. An instance
// create reported that no listing shows within ListGrace is destroyed,
// and that listing fails saying so.
func (d *Driver) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	stdout, err := d.run(ctx, VerbList, "", listInput{OwnerTag: map[string]string{cloud.TagOwner: filter[cloud.TagOwner]}})
	if err != nil {
		return nil, err
	}
	lines, err := d.parseList(stdout)
	if err != nil {
		return nil, err
	}

	now := d.opts.Now()
	d.mu.Lock()
	seen := make(map[cloud.InstanceID]bool, len(lines))
	var result []cloud.Instance
	for _, l := range lines {
		id := cloud.InstanceID(l.ID)
		if l.State == StateTerminated {
			delete(d.created, id)
			delete(d.known, id)
			delete(d.localTags, id)
			continue
		}
		tags := l.Tags
		if lt, ok := d.localTags[id]; ok {
			tags = lt.Clone()
		}
		if _, ok := tags[cloud.TagOwner]; !ok || !matches(tags, filter) || seen[id] {
			continue // not the dispatcher's, not asked for, or printed twice
		}
		seen[id] = true
		delete(d.created, id)
		inst := d.known[id]
		if inst == nil {
			inst = &Instance{d: d}
			inst.Init(id, cloud.Description[struct{}]{})
			d.known[id] = inst
		}
		inst.update(l, tags, d.address(l.Address))
		result = append(result, inst)
	}
	var lost []*Instance
	for id, c := range d.created {
		switch {
		case now.Sub(c.at) >= d.opts.ListGrace:
			delete(d.created, id)
			delete(d.known, id)
			lost = append(lost, c.inst)
		case !seen[id] && matches(c.inst.Tags(), filter):
			result = append(result, c.inst)
		}
	}
	for id := range d.known {
		if _, ok := d.created[id]; !ok && !seen[id] && len(filter) == 0 {
			delete(d.known, id)
			delete(d.localTags, id)
		}
	}
	d.mu.Unlock()
	sort.Slice(result, func(i, j int) bool { return result[i].ID() < result[j].ID() })
	if len(lost) > 0 {
		return nil, d.lost(ctx, lost)
	}
	return result, nil
}

// lost destroys the instances create reported that never showed up in a
// listing (nothing may be left running unseen), and says so.
func (d *Driver) lost(ctx context.Context, lost []*Instance) error {
	var ids []string
	for _, inst := range lost {
		ids = append(ids, string(inst.ID()))
		err := inst.Destroy(ctx)
		d.log.Error("script driver: instance create reported never appeared in list; destroyed", "instance", string(inst.ID()), "after", d.opts.ListGrace, "destroy_err", err)
	}
	return fmt.Errorf("script driver: the %s reported instance %s, which the %s has not printed within %s: the destroy command was run on it; make list print every instance carrying the %s tag",
		d.commandName(VerbCreate), strings.Join(ids, ", "), d.commandName(VerbList), d.opts.ListGrace, cloud.TagOwner)
}

// parseList reads list's output, an instance a line. One bad line fails
// the whole listing: a partial one would make the pool take the missing
// instances for gone.
func (d *Driver) parseList(stdout []byte) ([]listLine, error) {
	var out []listLine
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), maxStdout)
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l listLine
		if err := decodeOne(raw, &l); err != nil {
			return nil, fmt.Errorf("script driver: the %s: line %d %v", d.commandName(VerbList), n, err)
		}
		if l.ID == "" {
			return nil, fmt.Errorf("script driver: the %s: line %d has no id (it printed %s)", d.commandName(VerbList), n, preview(raw))
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("script driver: read the output of the %s: %w", d.commandName(VerbList), err)
	}
	return out, nil
}

func matches(tags, filter cloud.Tags) bool {
	for k, v := range filter {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// addressOf is where instance id's SSH server is, as last seen.
func (d *Driver) addressOf(id cloud.InstanceID) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if inst := d.known[id]; inst != nil {
		return inst.Address()
	}
	return ""
}

// forget drops a destroyed instance from the grace list.
func (d *Driver) forget(id cloud.InstanceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.created, id)
}
