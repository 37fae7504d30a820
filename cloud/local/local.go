//go:build unix

// Package local is the embedded default cloud driver (docs/design.md §8): every
// instance is a sandbox directory on this machine plus an in-process SSH
// server on 127.0.0.1 with its own host key, accepting only the dispatcher's
// client key. Containers started through the runner are real local
// processes. Tags live in a file per instance, so a restarted dispatcher
// finds its instances (and their running containers) again.
//
// Layout under Options.Dir:
//
//	client_key                 the dispatcher's client key (OpenSSH PEM, 0600)
//	instances/<id>/host_key    the instance's host key (OpenSSH PEM, 0600)
//	instances/<id>/tags.json   the instance's tags
//	instances/<id>/type.json   the cloud.InstanceType it was created as
//	instances/<id>/home/       the SSH sessions' working directory and $HOME
//	instances/<id>/runner/     the runner's state dir ($DISPATCH_TUI_RUNNER_DIR)
package local

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/sshserver"
	"dispatch-tui/engine/runner/agent"
)

// File and directory names.
const (
	fileClientKey = "client_key"
	dirInstances  = "instances"
	fileHostKey   = "host_key"
	fileTags      = "tags.json"
	fileType      = "type.json"
	dirHome       = "home"
	dirRunner     = "runner"
	fileSecret    = ".dispatch-tui-secret"

	// RunnerDirEnv is the environment variable every session gets, naming
	// the instance's runner state directory.
	RunnerDirEnv = agent.StateDirEnv

	idPrefix     = "local-"
	tmpPrefix    = ".tmp-"
	deadPrefix   = ".destroyed-"
	maxIDRetries = 16
)

// ErrStopped is returned by Create after Stop.
var ErrStopped = errors.New("local driver stopped")

// Options configures a Driver.
type Options struct {
	// Dir is the driver's root; instances live in Dir/instances/<id>/.
	Dir string
	// BootDelay is how long after its creation an instance's SSH server
	// starts accepting connections. Create returns at once.
	BootDelay time.Duration
	// Logger may be nil.
	Logger *slog.Logger
}

// Driver is the local cloud.InstanceSet.
type Driver struct {
	opts   Options
	log    *slog.Logger
	signer ssh.Signer

	mu        sync.Mutex
	instances map[cloud.InstanceID]*Instance
	stopped   bool
}

var _ cloud.InstanceSet = (*Driver)(nil)

// New opens (creating if needed) the driver's directory, loads the client
// key (generating it the first time) and every existing instance, and
// restarts the instances' SSH servers.
func New(opts Options) (*Driver, error) {
	if opts.Dir == "" {
		return nil, errors.New("local driver: Dir is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, dirInstances), 0o700); err != nil {
		return nil, fmt.Errorf("local driver: %w", err)
	}
	signer, err := loadOrCreateKey(filepath.Join(opts.Dir, fileClientKey))
	if err != nil {
		return nil, fmt.Errorf("local driver: client key: %w", err)
	}
	d := &Driver{
		opts:      opts,
		log:       log,
		signer:    signer,
		instances: make(map[cloud.InstanceID]*Instance),
	}
	if err := d.load(); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// ClientSigner returns the dispatcher's client key, the only key the
// instances' SSH servers accept.
func (d *Driver) ClientSigner() ssh.Signer { return d.signer }

// HostKey returns the host key of instance id, pinned at its creation.
func (d *Driver) HostKey(id cloud.InstanceID) (ssh.PublicKey, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	inst, ok := d.instances[id]
	if !ok {
		return nil, false
	}
	return inst.hostKey.PublicKey(), true
}

func (d *Driver) instancesDir() string { return filepath.Join(d.opts.Dir, dirInstances) }

// load reads every instance directory and starts its SSH server.
func (d *Driver) load() error {
	root := d.instancesDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("local driver: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) || strings.HasPrefix(name, deadPrefix) {
			// A create or destroy that did not finish.
			if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
				d.log.Warn("local: removing leftover directory", "dir", name, "err", err)
			}
			continue
		}
		if !e.IsDir() || !strings.HasPrefix(name, idPrefix) {
			continue
		}
		inst, created, err := d.loadInstance(cloud.InstanceID(name), filepath.Join(root, name))
		if err != nil {
			d.log.Warn("local: skipping unreadable instance", "instance", name, "err", err)
			continue
		}
		if err := inst.startServer(created.Add(d.opts.BootDelay)); err != nil {
			return fmt.Errorf("local driver: instance %s: %w", name, err)
		}
		d.instances[inst.id] = inst
		d.log.Info("local: instance loaded", "instance", name, "address", inst.Address())
	}
	return nil
}

func (d *Driver) loadInstance(id cloud.InstanceID, dir string) (*Instance, time.Time, error) {
	keyPath := filepath.Join(dir, fileHostKey)
	fi, err := os.Stat(keyPath)
	if err != nil {
		return nil, time.Time{}, err
	}
	hostKey, err := readKey(keyPath)
	if err != nil {
		return nil, time.Time{}, err
	}
	var tags cloud.Tags
	if err := readJSON(filepath.Join(dir, fileTags), &tags); err != nil {
		return nil, time.Time{}, err
	}
	if tags == nil {
		tags = cloud.Tags{}
	}
	var it cloud.InstanceType
	if err := readJSON(filepath.Join(dir, fileType), &it); err != nil {
		return nil, time.Time{}, err
	}
	return d.newInstance(id, dir, it, tags, hostKey), fi.ModTime(), nil
}

func (d *Driver) newInstance(id cloud.InstanceID, dir string, it cloud.InstanceType, tags cloud.Tags, hostKey ssh.Signer) *Instance {
	return &Instance{
		d:       d,
		id:      id,
		dir:     dir,
		it:      it,
		hostKey: hostKey,
		tags:    tags,
	}
}

// Create makes a new instance directory and starts its SSH server, which
// accepts connections once BootDelay has passed.
func (d *Driver) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	stopped := d.stopped
	d.mu.Unlock()
	if stopped {
		return nil, ErrStopped
	}
	tags = tags.Clone()
	root := d.instancesDir()

	var id cloud.InstanceID
	var tmp string
	for i := 0; ; i++ {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		id = cloud.InstanceID(idPrefix + hex.EncodeToString(b[:]))
		if _, err := os.Lstat(filepath.Join(root, string(id))); err == nil {
			if i >= maxIDRetries {
				return nil, errors.New("local driver: could not pick a free instance id")
			}
			continue
		}
		tmp = filepath.Join(root, tmpPrefix+string(id))
		if err := os.Mkdir(tmp, 0o700); err != nil {
			if errors.Is(err, fs.ErrExist) && i < maxIDRetries {
				continue
			}
			return nil, fmt.Errorf("local driver: %w", err)
		}
		break
	}
	fail := func(err error) (cloud.Instance, error) {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("local driver: creating instance: %w", err)
	}

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fail(err)
	}
	hostKey, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return fail(err)
	}
	if err := writeKey(filepath.Join(tmp, fileHostKey), priv); err != nil {
		return fail(err)
	}
	if err := writeJSONAtomic(filepath.Join(tmp, fileTags), tags); err != nil {
		return fail(err)
	}
	if err := writeJSONAtomic(filepath.Join(tmp, fileType), it); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(filepath.Join(tmp, dirHome), 0o700); err != nil {
		return fail(err)
	}
	if secret, ok := tags[cloud.TagSecret]; ok {
		if err := writeFileAtomic(filepath.Join(tmp, dirHome, fileSecret), []byte(secret), 0o600); err != nil {
			return fail(err)
		}
	}
	dir := filepath.Join(root, string(id))
	if err := os.Rename(tmp, dir); err != nil {
		return fail(err)
	}

	inst := d.newInstance(id, dir, it, tags, hostKey)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		// Stopped while we were creating: the instance exists on disk and
		// a new driver will find it, but no server runs now.
		return inst, nil
	}
	if err := inst.startServer(time.Now().Add(d.opts.BootDelay)); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("local driver: creating instance: %w", err)
	}
	d.instances[id] = inst
	d.log.Info("local: instance created", "instance", string(id), "type", it.Name, "address", inst.Address())
	return inst, nil
}

// Instances lists the live instances whose tags include every pair of
// filter, sorted by id.
func (d *Driver) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	all := make([]*Instance, 0, len(d.instances))
	for _, inst := range d.instances {
		all = append(all, inst)
	}
	d.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	var out []cloud.Instance
outer:
	for _, inst := range all {
		tags := inst.Tags()
		for k, v := range filter {
			if got, ok := tags[k]; !ok || got != v {
				continue outer
			}
		}
		out = append(out, inst)
	}
	return out, nil
}

// Stop closes every SSH server. Instances stay on disk and their runner
// containers keep running; a new Driver on the same Dir finds them again.
func (d *Driver) Stop() {
	d.mu.Lock()
	d.stopped = true
	servers := make([]*sshserver.Server, 0, len(d.instances))
	for _, inst := range d.instances {
		if s := inst.getServer(); s != nil {
			servers = append(servers, s)
		}
	}
	d.mu.Unlock()
	for _, s := range servers {
		s.Close()
	}
}

// Instance is one local instance.
type Instance struct {
	d       *Driver
	id      cloud.InstanceID
	dir     string
	it      cloud.InstanceType
	hostKey ssh.Signer

	mu        sync.Mutex
	tags      cloud.Tags
	srv       *sshserver.Server
	addr      string
	destroyed bool
}

var _ cloud.Instance = (*Instance)(nil)

func (i *Instance) ID() cloud.InstanceID { return i.id }

func (i *Instance) String() string {
	return fmt.Sprintf("%s (%s @ %s)", i.id, i.it.Name, i.Address())
}

func (i *Instance) ProviderType() string { return i.it.ProviderType }

// Address is where the instance's SSH server currently listens.
func (i *Instance) Address() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.addr
}

// Dir is the instance's sandbox directory.
func (i *Instance) Dir() string { return i.dir }

// Home is the instance's home directory, where sessions run.
func (i *Instance) Home() string { return filepath.Join(i.dir, dirHome) }

func (i *Instance) Tags() cloud.Tags {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.tags.Clone()
}

// SetTags replaces the instance's tags (tags.json is rewritten atomically).
func (i *Instance) SetTags(ctx context.Context, tags cloud.Tags) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tags = tags.Clone()
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.destroyed {
		return fmt.Errorf("local driver: instance %s is destroyed", i.id)
	}
	if err := writeJSONAtomic(filepath.Join(i.dir, fileTags), tags); err != nil {
		return fmt.Errorf("local driver: %w", err)
	}
	if secret, ok := tags[cloud.TagSecret]; ok && secret != i.tags[cloud.TagSecret] {
		if err := writeFileAtomic(filepath.Join(i.dir, dirHome, fileSecret), []byte(secret), 0o600); err != nil {
			return fmt.Errorf("local driver: %w", err)
		}
	}
	i.tags = tags
	return nil
}

// Destroy kills the processes the instance's sessions and runner started,
// stops its SSH server and removes its directory. Destroying a destroyed
// instance is not an error.
func (i *Instance) Destroy(ctx context.Context) error {
	i.mu.Lock()
	if i.destroyed {
		i.mu.Unlock()
		return nil
	}
	i.destroyed = true
	srv := i.srv
	i.mu.Unlock()

	d := i.d
	d.mu.Lock()
	delete(d.instances, i.id)
	d.mu.Unlock()

	if srv != nil {
		srv.Close()
	}
	agent.KillAll(filepath.Join(i.dir, dirRunner))

	dead := filepath.Join(d.instancesDir(), deadPrefix+string(i.id))
	if err := os.Rename(i.dir, dead); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("local driver: destroying %s: %w", i.id, err)
	}
	if err := os.RemoveAll(dead); err != nil {
		return fmt.Errorf("local driver: destroying %s: %w", i.id, err)
	}
	d.log.Info("local: instance destroyed", "instance", string(i.id))
	return nil
}

func (i *Instance) getServer() *sshserver.Server {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.srv
}

// startServer starts the instance's SSH server, accepting from readyAt on.
func (i *Instance) startServer(readyAt time.Time) error {
	s, err := sshserver.Start(sshserver.Config{
		HostKey:    i.hostKey,
		ClientKeys: []ssh.PublicKey{i.d.signer.PublicKey()},
		ReadyAt:    readyAt,
		Home:       filepath.Join(i.dir, dirHome),
		Env:        []string{RunnerDirEnv + "=" + filepath.Join(i.dir, dirRunner)},
		Logger:     i.d.log.With("instance", string(i.id)),
	})
	if err != nil {
		return err
	}
	i.mu.Lock()
	i.srv = s
	i.addr = s.Addr()
	i.mu.Unlock()
	return nil
}

// Keys and files.

func loadOrCreateKey(path string) (ssh.Signer, error) {
	s, err := readKey(path)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := writeKey(path, priv); err != nil {
		return nil, err
	}
	return ssh.NewSignerFromKey(priv)
}

func readKey(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func writeKey(path string, priv ed25519.PrivateKey) error {
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, pem.EncodeToMemory(block), 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), 0o600)
}

// writeFileAtomic writes data to a temporary file next to path, syncs it and
// renames it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	return nil
}
