package ec2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
)

// Executor returns the runner.Executor for inst: SSH as the admin user
// with the dispatcher's key, to the address the latest listing shows (a
// public address appears after launch), checking the instance's secret
// before anything runs. Host keys of new cloud instances are not known in
// advance: the first one seen is pinned for the driver's lifetime, and the
// secret check is what proves the instance is the one created.
func (d *Driver) Executor(inst cloud.Instance) (runner.Executor, error) {
	secret := inst.Tags()[cloud.TagSecret]
	if secret == "" {
		return nil, fmt.Errorf("ec2 instance %s has no secret tag: not created by a dispatcher", inst.ID())
	}
	return &executor{d: d, id: inst.ID(), secret: secret}, nil
}

// executor dials through a sshexec.Executor for the instance's current
// address, replacing it when the address changes.
type executor struct {
	d      *Driver
	id     cloud.InstanceID
	secret string

	mu      sync.Mutex
	addr    string
	cur     *sshexec.Executor
	hostKey []byte // pinned on first contact
	closed  bool
}

var (
	_ runner.SessionExecutor = (*executor)(nil)
	_ runner.WatchExecutor   = (*executor)(nil)
)

var errNoAddress = errors.New("instance has no address yet")

type notSent struct{ err error }

func (e notSent) Error() string        { return e.err.Error() }
func (e notSent) Unwrap() error        { return e.err }
func (e notSent) Is(target error) bool { return target == runner.ErrNotSent }

func (e *executor) get() (*sshexec.Executor, error) {
	addr := e.d.address(e.id)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, notSent{sshexec.ErrClosed}
	}
	if addr == "" {
		return nil, notSent{fmt.Errorf("ec2 instance %s: %w", e.id, errNoAddress)}
	}
	if e.cur != nil && addr == e.addr {
		return e.cur, nil
	}
	if e.cur != nil {
		e.cur.Close()
	}
	e.addr = addr
	e.cur = sshexec.New(sshexec.Options{
		Address: addr, User: e.d.opts.AdminUser, Signer: e.d.opts.Signer,
		HostKeyCallback: e.pinFirst, Secret: e.secret,
	})
	return e.cur, nil
}

// pinFirst accepts the first host key the instance shows and only that
// one afterwards.
func (e *executor) pinFirst(_ string, _ net.Addr, key ssh.PublicKey) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hostKey == nil {
		e.hostKey = key.Marshal()
		return nil
	}
	if !bytes.Equal(e.hostKey, key.Marshal()) {
		return fmt.Errorf("ec2 instance %s: host key changed since first contact", e.id)
	}
	return nil
}

func (e *executor) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	x, err := e.get()
	if err != nil {
		return nil, nil, err
	}
	return x.Execute(ctx, cmd, stdin)
}

func (e *executor) Exchange(ctx context.Context, cmd string, frame []byte) ([]byte, error) {
	x, err := e.get()
	if err != nil {
		return nil, err
	}
	return x.Exchange(ctx, cmd, frame)
}

// Watch keeps "runner watch" open on the instance's current address; a
// new address ends it with the connection, and the pool opens it again.
func (e *executor) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	x, err := e.get()
	if err != nil {
		return err
	}
	return x.Watch(ctx, cmd, line)
}

func (e *executor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	if e.cur != nil {
		return e.cur.Close()
	}
	return nil
}
