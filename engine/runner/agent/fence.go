// Fencing by epoch (docs/design.md §11): the highest leader epoch this
// runner has seen, kept in its state directory, and the lock that orders
// every call against a raise of it.

//go:build unix

package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"dispatch-tui/engine/runner"
)

// Files of the state directory, beside the containers' directories ('~'
// is not valid in an id, so no container is named so).
const (
	fileEpoch     = "~epoch"      // the highest epoch seen, in decimal
	fileEpochLock = "~epoch.lock" // flock(2)ed: shared by a call, exclusive by a raise
)

// fence admits a call carrying epoch (0: none, nothing checked): it
// returns with the epoch lock held shared, to be released when the call is
// done, so that a raise by a newer leader waits for calls in flight and
// every later call of an older one is refused. A refused call gets
// runner.CodeFenced, having printed why.
func (a *agent) fence(verb string, epoch int64) (release func(), code int) {
	release, code, msg := a.admit(verb, epoch)
	if code != 0 {
		return nil, a.fail(code, "%s", msg)
	}
	return release, 0
}

// admit is fence, saying why it refused rather than printing it.
func (a *agent) admit(verb string, epoch int64) (release func(), code int, msg string) {
	if epoch == 0 {
		return func() {}, 0, ""
	}
	root, _, err := a.stateRoot(true)
	if err != nil {
		return nil, 1, fmt.Sprintf("runner %s: %v", verb, err)
	}
	lock, err := os.OpenFile(filepath.Join(root, fileEpochLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 1, fmt.Sprintf("runner %s: epoch lock: %v", verb, err)
	}
	release = func() { lock.Close() } // closing drops the flock
	for _, how := range []int{syscall.LOCK_SH, syscall.LOCK_EX, syscall.LOCK_SH} {
		if err := flock(lock, how); err != nil {
			release()
			return nil, 1, fmt.Sprintf("runner %s: epoch lock: %v", verb, err)
		}
		seen, err := readEpoch(root)
		if err != nil {
			release()
			return nil, 1, fmt.Sprintf("runner %s: %v", verb, err)
		}
		highest, refused := runner.CheckEpoch(epoch, seen)
		switch {
		case refused:
			release()
			return nil, runner.CodeFenced, runner.FencedMessage(verb, epoch, seen)
		case highest == seen && how == syscall.LOCK_SH:
			return release, 0, ""
		case highest != seen && how == syscall.LOCK_EX:
			if err := writeEpoch(root, highest); err != nil {
				release()
				return nil, 1, fmt.Sprintf("runner %s: %v", verb, err)
			}
		}
		// Shared and newer: raise it under the exclusive lock. Raised:
		// back to shared for the call (flock converts by unlocking
		// first, so it is checked again).
	}
	release()
	return nil, 1, fmt.Sprintf("runner %s: the epoch file changed under its lock", verb)
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// readEpoch reads the highest epoch seen (0 before any).
func readEpoch(root string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(root, fileEpoch))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the epoch: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the epoch file %s holds %q, not a number: remove it (the next leader writes it again)", filepath.Join(root, fileEpoch), b)
	}
	return n, nil
}

// writeEpoch replaces the epoch file atomically and durably: a temporary
// file synced, renamed over it, and the directory synced, so a crash
// leaves the old epoch or the new, never a torn or lost raise.
func writeEpoch(root string, epoch int64) error {
	tmp := filepath.Join(root, fileEpoch+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write the epoch: %w", err)
	}
	_, err = f.WriteString(strconv.FormatInt(epoch, 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(root, fileEpoch))
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(root); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("write the epoch: %w", err)
	}
	return nil
}

// fenceFrame admits a batch's or serve frame's requests under their
// epoch (one caller's: the highest of them). When that is refused every
// reply says so and refused is true; a request of a lower epoch than the
// frame's is refused on its own.
func (a *agent) fenceFrame(f *frame, replies []runner.Reply) (release func(), refused bool) {
	var epoch int64
	for i, r := range f.reqs {
		if f.parseErrs[i] == nil {
			epoch = max(epoch, r.Epoch)
		}
	}
	release, code, msg := a.admit("batch", epoch)
	for i, r := range f.reqs {
		switch {
		case code != 0:
			replies[i] = runner.Reply{Code: code, Stderr: msg}
		case f.parseErrs[i] == nil && r.Epoch != 0 && r.Epoch < epoch:
			replies[i] = runner.Reply{Code: runner.CodeFenced, Stderr: runner.FencedMessage(r.Verb, r.Epoch, epoch)}
			f.parseErrs[i] = errFenced
		}
	}
	return release, code != 0
}

// errFenced marks a request fenceFrame has answered.
var errFenced = errors.New("fenced")
