// One claimed host as a cloud.Instance: tags, destroy and reachability.

package sshhosts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
)

// One claimed host as a cloud.Instance: its tags, destroy (kill the
// leftovers, release the claim) and reachability.

// ID returns the host's stable instance id.
func (h *Instance) ID() cloud.InstanceID { return h.id }

func (h *Instance) String() string {
	return fmt.Sprintf("%s (%s @ %s)", h.id, h.it.Name, h.addr)
}

// ProviderType is the provider type of the host's configured instance type.
func (h *Instance) ProviderType() string { return h.it.ProviderType }

// Address is the host's SSH address (host:port).
func (h *Instance) Address() string { return h.addr }

// DestroyNeedsReach is true: Destroy releases a host only by reaching it,
// so it cannot end what runs on a host that does not answer
// (cloud.ReachDestroyer).
func (h *Instance) DestroyNeedsReach() bool { return true }

// WorkDir is the host's work directory ("" = the login directory).
func (h *Instance) WorkDir() string { return h.workDir }

// Tags returns the tags the host was last seen with (nil when it is not
// claimed).
func (h *Instance) Tags() cloud.Tags {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if h.tags == nil {
		return nil
	}
	return h.tags.Clone()
}

// SetTags rewrites the host's tags file, and its secret file when the
// secret changes. The host must be claimed.
func (h *Instance) SetTags(ctx context.Context, tags cloud.Tags) error {
	if h.d.isStopped() {
		return ErrStopped
	}
	if strings.ContainsAny(tags[cloud.TagSecret], "\n\r") {
		return errors.New("sshhosts: the secret tag must not contain a newline")
	}
	tags = tags.Clone()
	body, err := tagsJSON(tags)
	if err != nil {
		return err
	}
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.d.mu.Lock()
	cur, presumed := h.tags, h.presumed
	h.d.mu.Unlock()
	if cur == nil {
		return fmt.Errorf("sshhosts: set tags on %s: %w", h.id, ErrNotClaimed)
	}
	if presumed {
		// Writing tags built on presumed ones would replace the host's
		// own (its secret among them) with guesses.
		return fmt.Errorf("sshhosts: set tags on %s: %w", h.id, ErrNotRead)
	}
	if f := h.d.foreign(cur); f != "" {
		return fmt.Errorf("sshhosts: set tags on %s: %w", h.id, &ClaimedError{Owner: f})
	}
	line := h.setTagsLine(false)
	stdin := body
	if s := tags[cloud.TagSecret]; s != cur[cloud.TagSecret] {
		line = h.setTagsLine(true)
		stdin = append([]byte(s+"\n"), body...)
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, _, err := h.mgmt.Execute(cctx, line, stdin); err != nil {
		h.noteUnreachable(err)
		return fmt.Errorf("sshhosts: set tags on %s: %w", h.id, err)
	}
	h.d.mu.Lock()
	h.tags = tags
	h.gen++
	h.d.mu.Unlock()
	return nil
}

// Destroy kills the containers the runner still runs on the host (errors
// are logged; a missing runner is fine), then removes the tags and secret
// files, which releases the host. A released host is not claimed again
// until a listing has seen it free. Destroying a host that is not claimed
// returns nil. It fails while the host cannot be reached: it cannot end
// what runs there then, so a failed Destroy proves nothing about the
// containers, and a successful one means they are dead.
func (h *Instance) Destroy(ctx context.Context) error {
	if h.d.isStopped() {
		return ErrStopped
	}
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.d.mu.Lock()
	claimed := h.tags != nil
	h.d.mu.Unlock()
	if !claimed {
		return nil
	}
	if h.d.opts.Owner != "" {
		// The tags file on the host is the authority: the host may have
		// been released and claimed by another dispatcher since we last
		// listed it. Only its holder can release it, so no one else can
		// claim it between this check and the release below.
		rctx, cancel := context.WithTimeout(ctx, listTimeout)
		tags, found, err := h.readTags(rctx)
		cancel()
		if err != nil {
			h.noteUnreachable(err)
			return fmt.Errorf("sshhosts: destroy %s: reading its tags: %w", h.id, err)
		}
		if !found {
			h.d.mu.Lock()
			h.tags, h.claimed, h.presumed, h.read = nil, false, false, true
			h.gen++
			h.d.mu.Unlock()
			return nil // released already
		}
		if f := h.d.foreign(tags); f != "" {
			h.d.mu.Lock()
			h.tags, h.presumed, h.read = tags, false, true
			h.gen++
			h.d.mu.Unlock()
			return fmt.Errorf("sshhosts: destroy %s: %w", h.id, &ClaimedError{Owner: f})
		}
	}
	if err := h.killLeftovers(ctx); err != nil {
		h.noteUnreachable(err)
		return fmt.Errorf("sshhosts: destroy %s: %w", h.id, err)
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, _, err := h.mgmt.Execute(cctx, h.releaseLine(), nil); err != nil {
		h.noteUnreachable(err)
		return fmt.Errorf("sshhosts: destroy %s: releasing: %w", h.id, err)
	}
	h.d.mu.Lock()
	h.tags = nil
	h.claimed, h.presumed = false, false
	h.gen++
	h.releasePending = true
	h.releasedAt = h.d.listStarts
	h.d.mu.Unlock()
	h.d.log.Info("sshhosts: host released", "instance", string(h.id), "address", h.addr)
	return nil
}

// oneShot hides an executor's "runner serve" sessions: Destroy's cleanup
// runs each call as its own process, so that no session of it outlives
// the claim on the host it releases (the management connection does).
type oneShot struct{ e *executor }

func (o oneShot) Execute(ctx context.Context, cmd string, stdin []byte) ([]byte, []byte, error) {
	return o.e.Execute(ctx, cmd, stdin)
}

// Close leaves the management connection open: it is the host's, not
// the cleanup's.
func (o oneShot) Close() error { return nil }

// killLeftovers kills every container the runner reports running and
// forgets the exited ones. It fails only when the host cannot be reached.
func (h *Instance) killLeftovers(ctx context.Context) error {
	if h.d.opts.RunnerPath == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	client := runner.Client{Exec: oneShot{h.mgmtExec}, Path: h.d.opts.RunnerPath}
	log := h.d.log.With("instance", string(h.id), "address", h.addr)
	sts, err := client.List(ctx)
	if err != nil {
		var xe *runner.ExitError
		if errors.As(err, &xe) {
			// No runner there (never deployed, or another version's path),
			// or it failed: nothing we can clean up with it.
			log.Info("sshhosts: destroy: runner list failed; no leftover cleanup", "err", err)
			return nil
		}
		return err
	}
	killed := 0
	for _, st := range sts {
		if st.State != runner.StateRunning {
			continue
		}
		if err := client.Kill(ctx, st.ID, runner.SignalKill); err != nil {
			log.Warn("sshhosts: destroy: killing leftover container", "container", st.ID, "err", err)
			continue
		}
		killed++
		log.Info("sshhosts: destroy: killed leftover container", "container", st.ID)
	}
	// Wait (briefly) for the killed ones to be reported exited.
	for wait := 0; killed > 0 && wait < 50; wait++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		next, err := client.List(ctx)
		if err != nil {
			log.Warn("sshhosts: destroy: runner list", "err", err)
			break
		}
		sts = next
		running := 0
		for _, st := range sts {
			if st.State == runner.StateRunning {
				running++
			}
		}
		if running == 0 {
			break
		}
	}
	for _, st := range sts {
		if st.State != runner.StateExited {
			continue
		}
		if err := client.Forget(ctx, st.ID); err != nil {
			log.Warn("sshhosts: destroy: forgetting container", "container", st.ID, "err", err)
		}
	}
	if err := client.Clean(ctx); err != nil {
		log.Warn("sshhosts: destroy: removing the runner's recycled directories", "err", err)
	}
	return nil
}

func (h *Instance) noteUnreachable(err error) {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	h.noteUnreachableLocked(err)
}

func (h *Instance) noteUnreachableLocked(err error) {
	if !h.unreachable {
		h.d.log.Warn("sshhosts: host unreachable", "instance", string(h.id), "address", h.addr, "err", err)
	} else {
		h.d.log.Debug("sshhosts: host still unreachable", "instance", string(h.id), "address", h.addr, "err", err)
	}
	h.unreachable = true
	if errors.Is(err, sshexec.ErrHostKey) {
		h.refusedErr = err.Error()
	}
}

func (h *Instance) noteReachableLocked() {
	if h.unreachable {
		h.d.log.Info("sshhosts: host reachable again", "instance", string(h.id), "address", h.addr)
	}
	h.unreachable = false
	h.refusedErr = ""
}
