// Package sshhosts is the cloud driver for a fixed pool of existing hosts
// reached with real SSH (docs/design.md §8).
//
// Every configured host is one instance with a stable id. Create claims a
// free host of the requested type; Destroy kills whatever the runner still
// runs there and releases the host. Whether a host is claimed, and by whom,
// is kept on the host itself, in its work directory (or the login directory
// when it has none):
//
//	.dispatch-tui-tags.json   the instance's tags (JSON object); present = claimed
//	.dispatch-tui-secret      tags[cloud.TagSecret], checked by the executor (0600)
//	runner/                   the runner's state dir, when the host has a work_dir
//
// so a restarted dispatcher, or a second one sharing the hosts, sees which
// hosts are taken. Host keys are checked against an OpenSSH known_hosts file.
//
// The management commands (reading and writing the tags, cleaning up on
// Destroy) run over their own connection per host. They are fixed shell
// lines: the only data that travels with them (tags and secret) goes on
// stdin, and paths come from the trusted config, quoted.
package sshhosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/secretfile"
	"dispatch-tui/engine/sshexec"
)

// Files kept on each host, relative to its work directory.
const (
	TagsFile   = ".dispatch-tui-tags.json"
	SecretFile = ".dispatch-tui-secret"
	// RunnerDir is the runner's state directory under a host's work_dir.
	RunnerDir = "runner"
	// RunnerDirEnv is the environment variable that tells the runner its
	// state directory (runner.StateDirEnv, which only exists on unix).
	RunnerDirEnv = "DISPATCH_TUI_RUNNER_DIR"
)

// Timeouts of the driver's own SSH calls.
const (
	dialTimeout = 5 * time.Second
	// listTimeout bounds reading one host's tags during Instances.
	listTimeout = 5 * time.Second
	// opTimeout bounds one management command (claim, set tags, release).
	opTimeout = 20 * time.Second
	// cleanupTimeout bounds Destroy's leftover-container cleanup.
	cleanupTimeout = 30 * time.Second
	// exitTaken is the exit status of the claim line when the host already
	// has a tags file.
	exitTaken = 17
)

var (
	// ErrStopped is returned after Stop.
	ErrStopped = errors.New("sshhosts driver stopped")
	// ErrNotClaimed is returned by SetTags on a host that is not claimed.
	ErrNotClaimed = errors.New("host is not claimed")
	// ErrNotRead is returned by SetTags on a host listed as ours from the
	// dispatcher's store that has not answered since start (recall.go).
	ErrNotRead = errors.New("host not reached since the dispatcher started: its tags are not known yet; try again once it answers")
	errTaken   = errors.New("host already has a tags file")
)

// Host is one existing machine the driver manages.
type Host struct {
	Address      string // host:port; also the instance's id
	InstanceType string // the name of one of Options.Types
	User         string // "" = Options.DefaultUser
	KeyFile      string // "" = Options.DefaultKeyFile
	WorkDir      string // "" = the login directory
}

// Options configure a Driver.
type Options struct {
	// Hosts are the machines to manage, one instance each.
	Hosts []Host
	// Types are the configured instance types; every host's instance type
	// must be one of them.
	Types []cloud.InstanceType
	// DefaultUser and DefaultKeyFile apply to hosts that set none
	// ([cloud] ssh_user, ssh_key_file). Without any user, the local user
	// name is used, as ssh does.
	DefaultUser, DefaultKeyFile string
	// KnownHosts is the OpenSSH known_hosts file host keys are checked
	// against (required).
	KnownHosts string
	// RunnerPath is the runner's path on the hosts as the worker pool uses
	// it (config runner_path plus "~<hash>"); Destroy runs it to kill
	// leftover containers. A relative path is relative to the work_dir.
	// "" skips that cleanup.
	RunnerPath string
	// Owner is this dispatcher's cloud.TagOwner value (its cluster_id).
	// A host whose tags name another owner is another dispatcher's: it is
	// reported "claimed by <owner>" and never re-tagged or released here.
	// "" = no check (tests of the driver alone).
	Owner string
	// LegacyOwner, if set, is an owner tag also treated as ours (hosts
	// claimed before dispatchers had their own ids, being adopted).
	LegacyOwner string
	Logger      *slog.Logger // nil = discard
}

// Driver is the sshhosts cloud.InstanceSet.
type Driver struct {
	opts     Options
	log      *slog.Logger
	hostKeys ssh.HostKeyCallback
	hosts    []*Instance // config order
	byID     map[cloud.InstanceID]*Instance

	mu         sync.Mutex
	stopped    bool
	listStarts uint64 // Instances calls started
	execs      map[*executor]struct{}
}

var (
	_ cloud.InstanceSet       = (*Driver)(nil)
	_ cloud.RefusedReporter   = (*Driver)(nil)
	_ cloud.OwnershipRecaller = (*Driver)(nil)
)

// Instance is one configured host. Its id never changes; whether it is an
// instance right now (claimed) depends on its tags file.
type Instance struct {
	d       *Driver
	id      cloud.InstanceID
	addr    string
	user    string
	signer  ssh.Signer
	it      cloud.InstanceType
	workDir string // cleaned; "" = the login directory; never contains '

	mgmt     *sshexec.Executor // management connection, no secret check
	mgmtExec *executor         // mgmt with the runner prefix (Destroy's cleanup)

	// opMu serialises Create (of this host), SetTags and Destroy.
	opMu sync.Mutex

	// Guarded by d.mu.
	tags           cloud.Tags // last known tags; nil = not claimed, or unknown content
	claimed        bool       // a tags file is on the host (ours or another dispatcher's)
	gen            uint64     // bumped by every completed Create/SetTags/Destroy
	releasePending bool       // released; not claimable until a listing has seen it free
	releasedAt     uint64     // d.listStarts when released
	unreachable    bool       // the last contact failed (for logging transitions)
	presumed       bool       // tags presumed from the dispatcher's store, not read from the host yet (recall.go)
	read           bool       // its tags have been read from the host since start
	foreignOwner   string     // the other dispatcher last seen holding it (logged once)
	refusedErr     string     // the last contact refused its host key ("" = not refused)
}

var (
	_ cloud.Instance       = (*Instance)(nil)
	_ cloud.ReachDestroyer = (*Instance)(nil)
)

// New checks the options, loads the client keys and the known_hosts file.
// It makes no connection.
func New(opts Options) (*Driver, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.KnownHosts == "" {
		return nil, errors.New("sshhosts: a known_hosts file is required ([cloud] known_hosts)")
	}
	kh, err := newKnownHostsFile(opts.KnownHosts, log)
	if err != nil {
		return nil, fmt.Errorf("sshhosts: %w", err)
	}
	if len(opts.Hosts) == 0 {
		return nil, errors.New("sshhosts: no hosts configured ([[cloud.sshhosts.host]])")
	}
	if strings.ContainsAny(opts.RunnerPath, "'\n") {
		return nil, fmt.Errorf("sshhosts: runner path %q must not contain a single quote or newline", opts.RunnerPath)
	}
	types := make(map[string]cloud.InstanceType, len(opts.Types))
	for _, it := range opts.Types {
		if it.ProviderType == "" {
			it.ProviderType = it.Name
		}
		types[it.Name] = it
	}
	d := &Driver{
		opts:     opts,
		log:      log,
		hostKeys: kh.check,
		byID:     make(map[cloud.InstanceID]*Instance, len(opts.Hosts)),
		execs:    make(map[*executor]struct{}),
	}
	signers := map[string]ssh.Signer{}
	var localUser string
	for i, hc := range opts.Hosts {
		name := fmt.Sprintf("host %d (%s)", i, hc.Address)
		if _, _, err := net.SplitHostPort(hc.Address); err != nil {
			return nil, fmt.Errorf("sshhosts: %s: address must be host:port: %v", name, err)
		}
		it, ok := types[hc.InstanceType]
		if !ok {
			return nil, fmt.Errorf("sshhosts: %s: unknown instance type %q", name, hc.InstanceType)
		}
		u := hc.User
		if u == "" {
			u = opts.DefaultUser
		}
		if u == "" {
			if localUser == "" {
				cu, err := user.Current()
				if err != nil {
					return nil, fmt.Errorf("sshhosts: %s: no user set (user or [cloud] ssh_user) and the local user is unknown: %v", name, err)
				}
				localUser = cu.Username
			}
			u = localUser
		}
		keyFile := hc.KeyFile
		if keyFile == "" {
			keyFile = opts.DefaultKeyFile
		}
		if keyFile == "" {
			return nil, fmt.Errorf("sshhosts: %s: no key file (set key_file or [cloud] ssh_key_file)", name)
		}
		signer, ok := signers[keyFile]
		if !ok {
			signer, err = loadKey(keyFile)
			if err != nil {
				return nil, fmt.Errorf("sshhosts: %s: %w", name, err)
			}
			signers[keyFile] = signer
		}
		wd, err := cleanWorkDir(hc.WorkDir)
		if err != nil {
			return nil, fmt.Errorf("sshhosts: %s: %w", name, err)
		}
		id := InstanceID(hc.Address)
		if other, dup := d.byID[id]; dup {
			return nil, fmt.Errorf("sshhosts: %s: same instance id %s as host %s", name, id, other.addr)
		}
		h := &Instance{d: d, id: id, addr: hc.Address, user: u, signer: signer, it: it, workDir: wd}
		h.mgmt = sshexec.New(sshexec.Options{
			Address:         h.addr,
			User:            h.user,
			Signer:          h.signer,
			HostKeyCallback: d.hostKeys,
			DialTimeout:     dialTimeout,
			CommandTimeout:  cleanupTimeout,
		})
		h.mgmtExec = &executor{e: h.mgmt, prefix: h.runnerPrefix(), suffix: h.runnerSuffix()}
		d.hosts = append(d.hosts, h)
		d.byID[id] = h
	}
	return d, nil
}

// InstanceID returns the stable instance id of the host at address:
// "host-" and the address with every character other than letters, digits
// and '_' replaced by '-'.
func InstanceID(address string) cloud.InstanceID {
	b := []byte(address)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		default:
			b[i] = '-'
		}
	}
	return cloud.InstanceID("host-" + string(b))
}

// cleanWorkDir checks and normalises a work_dir: no single quote or
// newline (it is quoted into shell lines), "~/x" means "x" relative to the
// login directory, and "~" or "" is the login directory itself.
func cleanWorkDir(wd string) (string, error) {
	if strings.ContainsAny(wd, "'\n\x00") {
		return "", fmt.Errorf("work_dir %q must not contain a single quote or newline", wd)
	}
	switch {
	case wd == "" || wd == "~" || wd == "~/":
		return "", nil
	case strings.HasPrefix(wd, "~/"):
		wd = wd[2:]
	case strings.HasPrefix(wd, "~"):
		return "", fmt.Errorf("work_dir %q: ~user is not supported; use an absolute path", wd)
	}
	wd = path.Clean(wd)
	if wd == "." {
		return "", nil
	}
	return wd, nil
}

func loadKey(file string) (ssh.Signer, error) {
	if err := secretfile.Stat(file); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			return nil, fmt.Errorf("key file %s is protected by a passphrase, which is not supported", file)
		}
		return nil, fmt.Errorf("key file %s: %w", file, err)
	}
	return s, nil
}

// Executor returns an SSH executor for inst (a *Instance from this driver):
// its host key is checked against known_hosts, and on every new connection
// the host must hold the secret of inst's tags. When the host has a
// work_dir, every command runs there, with the runner's state dir under it.
func (d *Driver) Executor(inst cloud.Instance) (runner.Executor, error) {
	h := d.byID[inst.ID()]
	if h == nil {
		return nil, fmt.Errorf("sshhosts: unknown instance %s", inst.ID())
	}
	if err := h.readIfPresumed(); err != nil {
		return nil, err
	}
	e := &executor{
		e: sshexec.New(sshexec.Options{
			Address:         h.addr,
			User:            h.user,
			Signer:          h.signer,
			HostKeyCallback: d.hostKeys,
			Secret:          inst.Tags()[cloud.TagSecret],
			SecretCommand:   "cat " + h.file(SecretFile),
		}),
		prefix: h.runnerPrefix(),
		suffix: h.runnerSuffix(),
		d:      d,
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		e.e.Close()
		return nil, ErrStopped
	}
	d.execs[e] = struct{}{}
	return e, nil
}

// executor runs every command line with a fixed prefix.
type executor struct {
	e      *sshexec.Executor
	prefix string
	suffix string
	d      *Driver // nil: not tracked
}

func (e *executor) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	return e.e.Execute(ctx, e.prefix+cmd+e.suffix, stdin)
}

// Watch keeps "runner watch" open (runner.WatchExecutor) through the same
// prefix as every other command, so that it watches the state dir of the
// host's work_dir: exits are then announced as they happen rather than
// found by the next probe (docs/design.md §6).
var _ runner.WatchExecutor = (*executor)(nil)

func (e *executor) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	return e.e.Watch(ctx, e.prefix+cmd+e.suffix, line)
}

// Exchange keeps "runner serve" sessions (runner.SessionExecutor) through
// the same prefix: a host's lists, starts, logs and forgets then cost a
// frame on a session already open, not an SSH session and a process start
// of the whole binary each, which on a loaded machine took a second a call
// and held every takeover's first starts (docs/design.md §6, Runner calls).
var _ runner.SessionExecutor = (*executor)(nil)

func (e *executor) Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error) {
	return e.e.Exchange(ctx, e.prefix+cmd+e.suffix, frame)
}

func (e *executor) Close() error {
	if e.d != nil {
		e.d.mu.Lock()
		delete(e.d.execs, e)
		e.d.mu.Unlock()
	}
	return e.e.Close()
}

// Stop closes every connection, including the executors handed out by
// Executor. Hosts stay claimed and their containers keep running.
func (d *Driver) Stop() {
	d.mu.Lock()
	d.stopped = true
	execs := make([]*executor, 0, len(d.execs))
	for e := range d.execs {
		execs = append(execs, e)
	}
	clear(d.execs)
	d.mu.Unlock()
	for _, e := range execs {
		e.e.Close()
	}
	for _, h := range d.hosts {
		h.mgmt.Close()
	}
}

func (d *Driver) isStopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopped
}

// Create claims the first free host of type it and writes tags (and the
// secret) on it. A host that cannot be reached is skipped. When no host of
// the type is free, it returns a *cloud.CapacityError for it.ProviderType.
func (d *Driver) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	if d.isStopped() {
		return nil, ErrStopped
	}
	if strings.ContainsAny(tags[cloud.TagSecret], "\n\r") {
		return nil, errors.New("sshhosts: the secret tag must not contain a newline")
	}
	tags = tags.Clone()
	body, err := tagsJSON(tags)
	if err != nil {
		return nil, err
	}
	provider := it.ProviderType
	if provider == "" {
		provider = it.Name
	}
	n, unreachable := 0, 0
	takenBy := map[string]int{} // owner ("" = unknown) -> hosts
	var unreachableErr error    // the first, for the create's error (and so its event)
	for _, h := range d.hosts {
		if h.it.Name != it.Name {
			continue
		}
		n++
		d.mu.Lock()
		foreign := h.foreignOwnerLocked()
		d.mu.Unlock()
		if foreign != "" {
			takenBy[foreign]++ // another dispatcher's, as last listed
			continue
		}
		if !h.opMu.TryLock() {
			continue // being created, re-tagged or destroyed
		}
		d.mu.Lock()
		free := !h.claimed && !h.releasePending
		d.mu.Unlock()
		if !free {
			h.opMu.Unlock()
			continue
		}
		err := h.claim(ctx, tags[cloud.TagSecret], body)
		switch {
		case err == nil:
			d.mu.Lock()
			h.tags = tags
			h.claimed = true
			h.gen++
			h.unreachable = false
			d.mu.Unlock()
			h.opMu.Unlock()
			d.log.Info("sshhosts: host claimed", "instance", string(h.id), "address", h.addr, "type", it.Name)
			return h, nil
		case errors.Is(err, errTaken):
			owner, held := h.holder(ctx)
			takenBy[owner]++
			d.mu.Lock()
			if !h.claimed {
				h.claimed = true
				h.tags = held // someone else's (nil if unread; the next listing reads them)
				h.gen++
			}
			d.mu.Unlock()
			d.log.Info("sshhosts: host already claimed; skipping", "instance", string(h.id), "address", h.addr, "claimed_by", owner)
		default:
			unreachable++
			if unreachableErr == nil {
				unreachableErr = fmt.Errorf("%s: %w", h.addr, err)
			}
			h.noteUnreachable(err)
		}
		h.opMu.Unlock()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	why := fmt.Sprintf("no free host of type %s (%d configured", it.Name, n)
	if unreachable > 0 {
		why += fmt.Sprintf(", %d unreachable", unreachable)
	}
	why += describeTaken(takenBy) + ")"
	if unreachableErr != nil {
		why += "; " + unreachableErr.Error()
	}
	return nil, &cloud.CapacityError{InstanceType: provider, Err: errors.New(why)}
}

// Instances reads every host's tags file (in parallel, each bounded by a
// few seconds) and lists the claimed hosts whose tags include filter. A
// host that cannot be reached keeps the tags it was last seen with: it is
// still listed if it was claimed (an unreachable host is not a vanished
// one), and not listed if it was never seen claimed.
func (d *Driver) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return nil, ErrStopped
	}
	d.listStarts++
	start := d.listStarts
	gens := make([]uint64, len(d.hosts))
	for i, h := range d.hosts {
		gens[i] = h.gen
	}
	d.mu.Unlock()

	type result struct {
		tags  cloud.Tags
		found bool
		err   error
	}
	res := make([]result, len(d.hosts))
	var wg sync.WaitGroup
	for i, h := range d.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			r := &res[i]
			r.tags, r.found, r.err = h.readTags(cctx)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var out []cloud.Instance
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, h := range d.hosts {
		r := res[i]
		if h.gen == gens[i] { // else a create/set/destroy finished meanwhile: it knows better
			h.noteReadLocked(r.tags, r.found, r.err)
		} else if r.err != nil {
			h.noteUnreachableLocked(r.err)
		}
		if h.releasePending && h.releasedAt < start {
			h.releasePending = false
		}
		if f := h.foreignOwnerLocked(); f != h.foreignOwner {
			h.foreignOwner = f
			if f != "" {
				d.log.Info("sshhosts: host claimed by another dispatcher; not touched", "instance", string(h.id), "address", h.addr, "claimed_by", f)
			}
		}
		if h.tags != nil && matches(h.tags, filter) {
			out = append(out, h)
		}
	}
	return out, nil
}

// Refused returns the hosts whose last contact refused their host key
// (cloud.RefusedReporter): a host refused since start-up is listed by no
// listing, and would otherwise be seen only in the log.
func (d *Driver) Refused() []cloud.RefusedHost {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []cloud.RefusedHost
	for _, h := range d.hosts {
		if h.refusedErr != "" {
			out = append(out, cloud.RefusedHost{ID: h.id, Address: h.addr, InstanceType: h.it.Name, Err: h.refusedErr})
		}
	}
	return out
}

func matches(tags, filter cloud.Tags) bool {
	for k, v := range filter {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}
