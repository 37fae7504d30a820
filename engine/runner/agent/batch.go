// "runner batch" and "runner serve": many requests per call, replies in order.

//go:build unix

package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"dispatch-tui/engine/runner"
)

// batch runs "runner batch": one Request per line on stdin, one Reply per
// line on stdout, in order. Consecutive starts are launched together under
// one supervisor. A request that fails gets a non-zero code in its reply;
// the batch itself fails only when stdin cannot be read.
func (a *agent) batch(stdin io.Reader) int {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	sc := newRequestScanner(stdin)
	var f frame
	for sc.Scan() {
		f.add(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return a.fail(2, "runner batch: reading requests: %v", err)
	}
	bw := bufio.NewWriter(a.stdout)
	if err := writeReplies(bw, a.runRequests(&f)); err != nil {
		return a.fail(1, "runner batch: %v", err)
	}
	if err := bw.Flush(); err != nil {
		return a.fail(1, "runner batch: %v", err)
	}
	return 0
}

func newRequestScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 2*maxSpecBytes+4096)
	return sc
}

// frame is the requests of a batch, or of one frame of serve, as read.
type frame struct {
	reqs      []runner.Request
	parseErrs []error
}

// add parses one input line; it reports false for an empty line (which
// ends a frame of serve).
func (f *frame) add(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return false
	}
	var r runner.Request
	err := json.Unmarshal(line, &r)
	f.reqs = append(f.reqs, r)
	f.parseErrs = append(f.parseErrs, err)
	return true
}

// runRequests runs a batch's requests in order, consecutive starts under
// one supervisor, and returns one reply per request.
func (a *agent) runRequests(f *frame) []runner.Reply {
	reqs, parseErrs := f.reqs, f.parseErrs
	replies := make([]runner.Reply, len(reqs))
	release, refused := a.fenceFrame(f, replies)
	if refused {
		return replies
	}
	defer release()
	var logsOut int // output the logs replies so far carry
	for i := 0; i < len(reqs); {
		if parseErrs[i] == nil && reqs[i].Verb == "start" {
			j := i
			for j < len(reqs) && parseErrs[j] == nil && reqs[j].Verb == "start" {
				j++
			}
			a.batchStart(reqs[i:j], replies[i:j])
			i = j
			continue
		}
		switch {
		case parseErrs[i] == errFenced: // answered
		case parseErrs[i] != nil:
			replies[i] = runner.Reply{Code: 2, Stderr: "runner batch: bad request: " + parseErrs[i].Error()}
		case reqs[i].Verb == "logs" && logsOut >= runner.MaxBatchOutput:
			replies[i] = deferredLogs(reqs[i].ID)
		default:
			replies[i] = a.batchOne(reqs[i])
			if reqs[i].Verb == "logs" {
				logsOut += len(replies[i].Stdout)
			}
		}
		i++
	}
	return replies
}

// deferredLogs is the reply to a logs request of a batch whose replies
// already carry runner.MaxBatchOutput of output.
func deferredLogs(id string) runner.Reply {
	return runner.Reply{Code: runner.CodeDeferred, Stderr: fmt.Sprintf("runner logs %s: deferred: this call's replies already carry %d bytes of output; ask again", id, runner.MaxBatchOutput)}
}

func writeReplies(bw *bufio.Writer, replies []runner.Reply) error {
	enc := json.NewEncoder(bw)
	for i := range replies {
		if err := enc.Encode(&replies[i]); err != nil {
			return err
		}
	}
	return nil
}

// serve runs "runner serve": batches over one long-lived session (docs/design.md
// §7.3 for the format, §9 for why), so that the dispatcher pays for neither an SSH session nor a
// process start per call. stdin carries frames: request lines as for
// batch, then an empty line. For each frame serve writes its replies, one
// line each, then an empty line. A frame cut short by the end of stdin is
// not run (the dispatcher takes a frame it could not finish sending for
// one never sent). Containers started here outlive the session as they
// outlive a batch, and so do the supervisors that serve keeps.
//
// Once its executable is deleted (a temp cleaner under /tmp), serve exits
// 127 at the next frame, without running it, as the shell does for a
// runner that is not there: it could start no supervisor, and a session
// kept alive would hide the deletion from the dispatcher, which installs
// the runner again on that answer.
func (a *agent) serve(stdin io.Reader) int {
	if stdin == nil {
		return 0
	}
	self := a.env.Self
	if self == "" {
		self, _ = os.Executable() // "" (not checked) when it cannot tell
	}
	// The frames' starts go to supervisors kept for the whole session.
	a.feeders = &feederPool{}
	defer a.feeders.close()
	sc := newRequestScanner(stdin)
	bw := bufio.NewWriter(a.stdout)
	var f frame
	for sc.Scan() {
		if f.add(sc.Bytes()) {
			continue
		}
		if selfGone(self) {
			return a.fail(127, "runner serve: %s: not found (deleted since this session started)", self)
		}
		if err := writeReplies(bw, a.runRequests(&f)); err != nil {
			return a.fail(1, "runner serve: %v", err)
		}
		if err := bw.WriteByte('\n'); err != nil {
			return a.fail(1, "runner serve: %v", err)
		}
		if err := bw.Flush(); err != nil {
			return a.fail(1, "runner serve: %v", err)
		}
		f = frame{reqs: f.reqs[:0], parseErrs: f.parseErrs[:0]}
	}
	if err := sc.Err(); err != nil {
		return a.fail(2, "runner serve: reading requests: %v", err)
	}
	return 0
}

// selfGone reports whether the executable at path was deleted (a running
// process keeps its deleted file; os.Executable still names its path).
func selfGone(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// batchOne runs one request other than start as its verb would.
func (a *agent) batchOne(r runner.Request) runner.Reply {
	var out, errb bytes.Buffer
	sub := &agent{env: a.env, stdout: &out, stderr: &errb}
	cmd, err := runner.ParseRequest(r)
	code := 0
	var dropped int64
	switch {
	case err != nil:
		code = sub.fail(2, "%v", err)
	case cmd.ID != "" && !safeID(cmd.ID):
		code = sub.fail(2, "runner %s: invalid container id %q", cmd.Verb, cmd.ID)
	default:
		switch cmd.Verb {
		case "version":
			code = sub.version()
		case "list":
			code = sub.list(cmd.ID)
		case "kill":
			code = sub.kill(cmd.ID, cmd.Signal)
		case "logs":
			code, dropped = sub.logs(cmd.ID, cmd.Tail, cmd.MaxBytes)
		case "forget":
			code = sub.forget(cmd.ID)
		default:
			code = sub.fail(2, "runner batch: verb %q not allowed in a batch", cmd.Verb)
		}
	}
	return runner.Reply{Code: code, Stdout: out.Bytes(), Stderr: strings.TrimSpace(errb.String()), Dropped: dropped}
}

// batchStart starts the containers of reqs (all "start") under one
// supervisor and fills their replies.
func (a *agent) batchStart(reqs []runner.Request, replies []runner.Reply) {
	failf := func(i, code int, format string, args ...any) {
		replies[i] = runner.Reply{Code: code, Stderr: strings.ReplaceAll(strings.TrimSpace(fmt.Sprintf(format, args...)), "\n", " ")}
	}
	root, _, err := a.stateRoot(true)
	if err != nil {
		for i := range reqs {
			failf(i, 1, "runner start %s: %v", reqs[i].ID, err)
		}
		return
	}
	var ids []string
	var idx []int
	var bodies [][]byte
	pool := newFreePool(root)
	defer pool.close()
	now := a.env.Now()
	for i, r := range reqs {
		if !safeID(r.ID) {
			failf(i, 2, "runner start: invalid container id %q: want [A-Za-z0-9_.-]{1,128}, not . or ..", r.ID)
			continue
		}
		if len(r.Spec) > maxSpecBytes {
			failf(i, 2, "runner start %s: spec is larger than 1 MiB", r.ID)
			continue
		}
		spec, err := decodeSpec(r.Spec)
		if err == nil && spec.ID != r.ID {
			err = fmt.Errorf("spec id %q does not match the request id %q", spec.ID, r.ID)
		}
		if err != nil {
			failf(i, 2, "runner start %s: %v", r.ID, err)
			continue
		}
		if spec.Image != "" {
			if _, err := exec.LookPath("docker"); err != nil {
				failf(i, 1, "runner start %s: image given but docker is not installed (install docker on the instance, or submit without an image)", r.ID)
				continue
			}
		}
		if slices.Contains(ids, r.ID) {
			failf(i, 1, "container %s already exists (forget it first, or use a new id)", r.ID)
			continue
		}
		dir := filepath.Join(root, r.ID)
		if err := pool.makeDir(dir, now); err != nil {
			if errors.Is(err, fs.ErrExist) {
				failf(i, 1, "container %s already exists (forget it first, or use a new id)", r.ID)
			} else {
				failf(i, 1, "runner start %s: %v", r.ID, err)
			}
			continue
		}
		body, err := writeSpec(dir, &spec)
		if err != nil {
			os.RemoveAll(dir)
			failf(i, 1, "runner start %s: writing spec: %v", r.ID, err)
			continue
		}
		ids = append(ids, r.ID)
		idx = append(idx, i)
		bodies = append(bodies, body)
	}
	if len(ids) == 0 {
		return
	}
	for k, err := range a.launchParallel(root, ids, bodies) {
		if err != nil {
			os.RemoveAll(filepath.Join(root, ids[k]))
			failf(idx[k], 1, "runner start %s: %v", ids[k], err)
		}
	}
}

// minPerSupervisor is the fewest containers a supervisor of a split batch
// starts: below it, another process costs more than it saves.
const minPerSupervisor = 32

// launchParallel starts the containers ids under several supervisors at
// once, one per CPU at most, each with a contiguous share of ids. A
// supervisor starts its commands one after another, and a batch of
// hundreds took one core for as long as they took to start while every
// other core idled: the last command of the batch, and the reply, waited
// for all of them (docs/design.md §9). Errors are per id, as
// launchMany's. Under serve, the supervisors are the session's, kept
// across frames (feederPool).
func (a *agent) launchParallel(root string, ids []string, specs [][]byte) []error {
	if a.feeders != nil {
		return a.feeders.launch(a, root, ids, specs)
	}
	shares := splitShares(len(ids), runtime.NumCPU())
	if len(shares) == 1 {
		return a.launchMany(root, ids, specs)
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for _, sh := range shares {
		wg.Go(func() {
			copy(errs[sh[0]:sh[1]], a.launchMany(root, ids[sh[0]:sh[1]], specs[sh[0]:sh[1]]))
		})
	}
	wg.Wait()
	return errs
}

// splitShares splits n containers into contiguous [from, to) shares, one
// per supervisor: at most cpus of them, each of minPerSupervisor or more
// (one share when n is smaller than two of those).
func splitShares(n, cpus int) [][2]int {
	k := max(1, min(cpus, n/minPerSupervisor))
	shares := make([][2]int, k)
	for i := range k {
		shares[i] = [2]int{i * n / k, (i + 1) * n / k}
	}
	return shares
}
