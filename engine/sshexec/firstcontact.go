// The executor of a created instance: its listed address, first host key pinned, secret checked.

package sshexec

// The executor of an instance a cloud driver created (ec2, script): SSH to
// the address its provider's latest listing shows, the first host key seen
// pinned, the instance's secret checked before anything runs.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// FirstContactOptions configure a FirstContact executor.
type FirstContactOptions struct {
	Kind   string // the driver's name, for errors ("ec2 instance i-…")
	ID     string // the instance's id
	Secret string // the instance's secret, which its first boot wrote
	User   string
	Signer ssh.Signer
	// Address returns the instance's address as the latest listing shows
	// it ("" while it has none: a public address appears after launch).
	Address func() string
}

// FirstContact runs commands on an instance whose host key is not known in
// advance: the first one seen is pinned for the executor's lifetime, and
// the secret check is what proves the instance is the one created. When
// the listed address changes it dials the new one.
type FirstContact struct {
	o FirstContactOptions

	mu      sync.Mutex
	addr    string
	cur     *Executor
	hostKey []byte // pinned on first contact
	closed  bool
}

var (
	_ runner.SessionExecutor = (*FirstContact)(nil)
	_ runner.WatchExecutor   = (*FirstContact)(nil)
	_ runner.ShellExecutor   = (*FirstContact)(nil)
)

// NewFirstContact returns the executor for one instance.
func NewFirstContact(o FirstContactOptions) *FirstContact { return &FirstContact{o: o} }

// ForCreated is the executor of inst, an instance a dispatcher created and
// gave a secret (its cloud.TagSecret), as the driver kind (ec2, script)
// reaches it: as user with signer, at the address the driver's latest
// listing shows. An instance without a secret was not created by a
// dispatcher, and is refused.
func ForCreated(kind string, inst cloud.Instance, user string, signer ssh.Signer, address func(cloud.InstanceID) string) (runner.Executor, error) {
	secret := inst.Tags()[cloud.TagSecret]
	if secret == "" {
		return nil, fmt.Errorf("%s instance %s has no secret tag: not created by a dispatcher", kind, inst.ID())
	}
	id := inst.ID()
	return NewFirstContact(FirstContactOptions{
		Kind: kind, ID: string(id), Secret: secret, User: user, Signer: signer,
		Address: func() string { return address(id) },
	}), nil
}

// ErrNoAddress: the instance has no address yet; nothing was sent.
var ErrNoAddress = errors.New("instance has no address yet")

// notSent marks errors raised before anything reached the instance.
type notSent struct{ err error }

func (e notSent) Error() string        { return e.err.Error() }
func (e notSent) Unwrap() error        { return e.err }
func (e notSent) Is(target error) bool { return target == runner.ErrNotSent }

func (p *FirstContact) get() (*Executor, error) {
	addr := p.o.Address()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, notSent{ErrClosed}
	}
	if addr == "" {
		return nil, notSent{fmt.Errorf("%s instance %s: %w", p.o.Kind, p.o.ID, ErrNoAddress)}
	}
	if p.cur != nil && addr == p.addr {
		return p.cur, nil
	}
	if p.cur != nil {
		p.cur.Close()
	}
	p.addr = addr
	p.cur = New(Options{Address: addr, User: p.o.User, Signer: p.o.Signer, HostKeyCallback: p.pinFirst, Secret: p.o.Secret})
	return p.cur, nil
}

// pinFirst accepts the first host key the instance shows and only that
// one afterwards.
func (p *FirstContact) pinFirst(_ string, _ net.Addr, key ssh.PublicKey) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hostKey == nil {
		p.hostKey = key.Marshal()
		return nil
	}
	if !bytes.Equal(p.hostKey, key.Marshal()) {
		return fmt.Errorf("%s instance %s: host key changed since first contact", p.o.Kind, p.o.ID)
	}
	return nil
}

// Execute runs cmd on the instance's current address.
func (p *FirstContact) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	x, err := p.get()
	if err != nil {
		return nil, nil, err
	}
	return x.Execute(ctx, cmd, stdin)
}

// Exchange sends frame to a serve session on the instance's current address.
func (p *FirstContact) Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error) {
	x, err := p.get()
	if err != nil {
		return nil, err
	}
	return x.Exchange(ctx, cmd, frame)
}

// Watch keeps cmd open on the instance's current address; a new address
// ends it with the connection, and the pool opens it again.
func (p *FirstContact) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	x, err := p.get()
	if err != nil {
		return err
	}
	return x.Watch(ctx, cmd, line)
}

// Shell opens an operator's shell on the instance's current address.
func (p *FirstContact) Shell(ctx context.Context, term string, cols, rows int, in io.Reader, out io.Writer) error {
	x, err := p.get()
	if err != nil {
		return err
	}
	return x.Shell(ctx, term, cols, rows, in, out)
}

// Close closes the connection; later calls fail without sending anything.
func (p *FirstContact) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cur != nil {
		return p.cur.Close()
	}
	return nil
}
