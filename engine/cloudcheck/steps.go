// The steps of a driver check, in the order Steps names them.

package cloudcheck

// The steps of a check, in the order Steps names them.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
	"dispatch-tui/engine/worker"
)

func (c *check) create(ctx context.Context) (string, error) {
	tags := cloud.Tags{
		cloud.TagOwner:        c.owner,
		cloud.TagInstanceType: c.it.Name,
		// A dispatcher that adopts it anyway runs nothing on it.
		cloud.TagIdleBehavior: string(worker.IdleHold),
		cloud.TagSecret:       c.secret,
		TagRun:                c.runID,
	}
	inst, err := c.drv.Set.Create(ctx, c.it, tags)
	if err != nil {
		return "", fmt.Errorf("create %s instance: %w; %s", c.it.Name, err, createHint(err, c.it))
	}
	c.inst = inst
	return fmt.Sprintf("instance %s (%s)", inst.ID(), inst.ProviderType()), nil
}

func createHint(err error, it cloud.InstanceType) string {
	switch cloud.ErrorKind(err) {
	case "quota":
		return "the account's quota is used up: free some instances or raise the quota"
	case "capacity":
		return fmt.Sprintf("the provider has no capacity for %s now: try another --type, or later", it.ProviderType)
	case "rate_limit":
		return "the provider throttles this account: try again in a few minutes"
	}
	return fmt.Sprintf("check the [cloud] section (credentials, image, network) and provider_type %q of instance type %s", it.ProviderType, it.Name)
}

// find returns the instance with id in a fresh listing of the check's
// instances, or nil.
func (c *check) find(ctx context.Context, id cloud.InstanceID) (cloud.Instance, error) {
	insts, err := c.drv.Set.Instances(ctx, c.runFilter())
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	for _, inst := range insts {
		if inst.ID() == id {
			return inst, nil
		}
	}
	return nil, nil
}

func (c *check) listed(ctx context.Context) (string, error) {
	id := c.inst.ID()
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		inst, err := c.find(ctx, id)
		if err != nil || inst == nil {
			if err == nil {
				err = fmt.Errorf("%s is not listed yet", id)
			}
			return false, err
		}
		c.inst = inst // the listing's view: a cloud may assign the address late
		c.seen = append(c.seen, id)
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w; the provider does not list the instance it created: check that listing by tags works with these credentials", err)
	}
	return fmt.Sprintf("%s listed, address %s", id, c.inst.Address()), nil
}

// ssh connects through the executor the worker pool would use: it checks
// the host key and, before running anything, the instance's secret.
func (c *check) ssh(ctx context.Context) (string, error) {
	exec, err := c.drv.NewExecutor(c.inst)
	if err != nil {
		return "", fmt.Errorf("executor for %s: %w", c.inst.ID(), err)
	}
	c.exec = exec
	c.client = runner.Client{Exec: exec, Path: c.cfg.Cloud.RunnerPath + "~" + c.hash}
	addr := c.inst.Address()
	err = c.poll(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := c.callCtx(ctx)
		defer cancel()
		_, _, err := exec.Execute(cctx, "true", nil)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, sshexec.ErrSecretMismatch):
			return true, fmt.Errorf("%w; the machine at %s is not the instance created (another one answers at that address), or the instance never got its secret", err, addr)
		case errors.Is(err, sshexec.ErrHostKey):
			return true, fmt.Errorf("%w; add the host's key to the file cloud.known_hosts names, or fix the address", err)
		}
		return false, err
	})
	if err != nil {
		return "", fmt.Errorf("%w; check that this machine reaches %s (firewall, security group), and cloud.ssh_user and cloud.ssh_key_file", err, addr)
	}
	if c.inMemory() {
		return "in-memory instance (the fake driver has no SSH)", nil
	}
	return fmt.Sprintf("connected to %s; host key and secret checked", addr), nil
}

func (c *check) bootProbe(ctx context.Context) (string, error) {
	cmd := c.cfg.Cloud.BootProbeCommand
	if cmd == "" {
		return "", &skipError{"cloud.boot_probe_command is empty"}
	}
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := c.callCtx(ctx)
		defer cancel()
		_, stderr, err := c.exec.Execute(cctx, cmd, nil)
		if err != nil && len(stderr) > 0 {
			err = fmt.Errorf("%w (%s)", err, strings.TrimSpace(string(stderr)))
		}
		return err == nil, err
	})
	if err != nil {
		return "", fmt.Errorf("%q: %w; check cloud.boot_probe_command and that the image finishes booting", cmd, err)
	}
	return fmt.Sprintf("%q succeeded", cmd), nil
}

// checkSecret proves the executor enforces the secret: an executor for the
// same instance holding a wrong secret must be refused. The right secret
// was checked when the ssh step connected.
func (c *check) checkSecret(ctx context.Context) (string, error) {
	if c.inMemory() {
		return "", &skipError{"the fake driver's instances are in memory: no SSH, no secret file to check"}
	}
	wrong := &retagged{Instance: c.inst, tags: c.inst.Tags().Clone()}
	wrong.tags[cloud.TagSecret] = randomHex(16)
	exec, err := c.drv.NewExecutor(wrong)
	if err != nil {
		return "", fmt.Errorf("executor for %s: %w", c.inst.ID(), err)
	}
	defer exec.Close()
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, _, err = exec.Execute(cctx, "true", nil)
	switch {
	case errors.Is(err, sshexec.ErrSecretMismatch):
		return "the instance proved its secret; a wrong one is refused", nil
	case err == nil:
		return "", errors.New("a connection expecting a wrong secret was accepted: the driver's executor does not check cloud.TagSecret, so it cannot tell its instance from another host at the same address; fix the driver")
	}
	return "", fmt.Errorf("connecting with a wrong secret: %w, not a secret mismatch", err)
}

// retagged is an instance seen with other tags.
type retagged struct {
	cloud.Instance
	tags cloud.Tags
}

func (r *retagged) Tags() cloud.Tags { return r.tags.Clone() }

// deploy installs the runner as the worker pool does: "runner version",
// and unless it reports our hash, the install line with the binary on
// stdin, then "runner version" again.
func (c *check) deploy(ctx context.Context) (string, error) {
	path := c.client.Path
	v, err := c.version(ctx)
	if err == nil && versionHash(v) == c.hash {
		return fmt.Sprintf("%s already installed (%s)", path, v), nil
	}
	var exitErr *runner.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return "", fmt.Errorf("%w; the instance stopped answering", err)
	}
	bin, err := os.ReadFile(c.binPath)
	if err != nil {
		return "", fmt.Errorf("read runner binary: %w", err)
	}
	_, stderr, err := c.exec.Execute(ctx, runner.InstallLine(path, int64(len(bin))), bin)
	if err != nil {
		if msg := strings.TrimSpace(string(stderr)); msg != "" && !strings.Contains(err.Error(), msg) {
			err = fmt.Errorf("%w (%s)", err, msg)
		}
		return "", fmt.Errorf("install runner at %s: %w; check that cloud.runner_path's directory exists and is writable by cloud.ssh_user", path, err)
	}
	v, err = c.version(ctx)
	if err != nil {
		return "", fmt.Errorf("the runner installed at %s does not run: %w; deploy a binary built for the instance (make build builds a static linux one)", path, err)
	}
	if got := versionHash(v); got != c.hash {
		return "", fmt.Errorf("the runner installed at %s reports hash %q, want %s: something else writes that path", path, got, c.hash)
	}
	return fmt.Sprintf("installed %s (%.1f MiB)", path, float64(len(bin))/(1<<20)), nil
}

func (c *check) version(ctx context.Context) (string, error) {
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	return c.client.Version(cctx)
}

// versionHash returns the hash from a "<version> <sha256>" line.
func versionHash(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// container runs "echo" through the runner protocol and checks its exit
// code and output.
func (c *check) container(ctx context.Context) (string, error) {
	id := "cloudtest-" + c.runID
	word := "dispatch-tui-cloudtest-" + c.runID
	spec := runner.Spec{ID: id, Command: []string{"echo", word}}
	if err := c.client.Start(ctx, spec); err != nil {
		return "", fmt.Errorf("%w; the runner could not start a process on the instance", err)
	}
	var st runner.Status
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		cctx, cancel := c.callCtx(ctx)
		defer cancel()
		sts, err := c.client.List(cctx)
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(sts, func(s runner.Status) bool { return s.ID == id })
		if i < 0 {
			return true, fmt.Errorf("runner list does not show container %s, which was started", id)
		}
		st = sts[i]
		if st.State != runner.StateExited {
			return false, fmt.Errorf("container %s is still %s", id, st.State)
		}
		return true, nil
	})
	if err != nil {
		return "", err
	}
	if st.ExitCode != 0 {
		return "", fmt.Errorf("%q exited %d, want 0", strings.Join(spec.Command, " "), st.ExitCode)
	}
	logs, err := c.client.Logs(ctx, id, 0, 0)
	if err != nil {
		return "", err
	}
	if out := logs.Data; !slices.Contains(strings.Split(string(out), "\n"), word) {
		return "", fmt.Errorf("output of %q is %q, which lacks the line %q", strings.Join(spec.Command, " "), out, word)
	}
	if err := c.client.Forget(ctx, id); err != nil {
		return "", err
	}
	return fmt.Sprintf("%q exited 0 with its output", strings.Join(spec.Command, " ")), nil
}

func (c *check) tags(ctx context.Context) (string, error) {
	want := "set-" + randomHex(4)
	tags := c.inst.Tags().Clone()
	tags[TagProbe] = want
	if err := c.inst.SetTags(ctx, tags); err != nil {
		return "", fmt.Errorf("set tags: %w; check that these credentials may tag instances", err)
	}
	id := c.inst.ID()
	err := c.poll(ctx, func(ctx context.Context) (bool, error) {
		inst, err := c.find(ctx, id)
		switch {
		case err != nil:
			return false, err
		case inst == nil:
			return false, fmt.Errorf("%s is no longer listed", id)
		case inst.Tags()[TagProbe] != want:
			return false, fmt.Errorf("a listing shows %s=%q, want %q", TagProbe, inst.Tags()[TagProbe], want)
		}
		c.inst = inst
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w; tags set are not read back by a listing", err)
	}
	return fmt.Sprintf("%s=%s read back by a fresh listing", TagProbe, want), nil
}

func (c *check) destroy(ctx context.Context) (string, error) {
	_ = c.exec.Close()
	id := c.inst.ID()
	if err := c.inst.Destroy(ctx); err != nil {
		return "", fmt.Errorf("destroy %s: %w", id, err)
	}
	if err := c.waitGone(ctx, []cloud.InstanceID{id}); err != nil {
		return "", err
	}
	c.destroyed = true
	return fmt.Sprintf("%s gone from the listing", id), nil
}
