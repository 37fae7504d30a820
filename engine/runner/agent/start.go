// "runner start": reading and checking specs, then launching them.

//go:build unix

package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"dispatch-tui/engine/runner"
)

// readSpec reads and checks the spec of container id from r.
func readSpec(r io.Reader, id string) (runner.Spec, error) {
	if r == nil {
		r = strings.NewReader("")
	}
	data, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return runner.Spec{}, fmt.Errorf("reading spec from stdin: %w", err)
	}
	if len(data) > maxSpecBytes {
		return runner.Spec{}, errors.New("spec on stdin is larger than 1 MiB")
	}
	spec, err := decodeSpec(data)
	if err != nil {
		return runner.Spec{}, err
	}
	if spec.ID != id {
		return runner.Spec{}, fmt.Errorf("spec id %q does not match the command-line id %q", spec.ID, id)
	}
	return spec, nil
}

// decodeSpec parses one JSON spec, rejecting unknown fields and trailing
// data, and checks it.
func decodeSpec(data []byte) (runner.Spec, error) {
	var spec runner.Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return runner.Spec{}, fmt.Errorf("bad spec JSON on stdin: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return runner.Spec{}, errors.New("bad spec JSON on stdin: data after the spec object")
	}
	// The same checks as the dispatcher's at submit: what exec(2) and
	// docker could not take literally is refused before anything starts.
	if err := runner.ValidateSpec(&spec); err != nil {
		return runner.Spec{}, fmt.Errorf("spec: %w", err)
	}
	return spec, nil
}

func (a *agent) start(id string, stdin io.Reader) int {
	spec, err := readSpec(stdin, id)
	if err != nil {
		return a.fail(2, "runner start %s: %v", id, err)
	}
	if spec.Image != "" {
		if _, err := exec.LookPath("docker"); err != nil {
			return a.fail(1, "runner start %s: image given but docker is not installed (install docker on the instance, or submit without an image)", id)
		}
	}
	root, _, err := a.stateRoot(true)
	if err != nil {
		return a.fail(1, "runner start %s: %v", id, err)
	}
	dir := filepath.Join(root, id)
	pool := newFreePool(root)
	err = pool.makeDir(dir, a.env.Now())
	pool.close()
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return a.fail(1, "container %s already exists (forget it first, or use a new id)", id)
		}
		return a.fail(1, "runner start %s: %v", id, err)
	}
	started := false
	defer func() {
		if !started {
			os.RemoveAll(dir)
		}
	}()
	body, err := writeSpec(dir, &spec)
	if err != nil {
		return a.fail(1, "runner start %s: writing spec: %v", id, err)
	}
	if err := a.launchMany(root, []string{id}, [][]byte{body})[0]; err != nil {
		return a.fail(1, "runner start %s: %v", id, err)
	}
	started = true
	return 0
}

// writeSpec returns spec as JSON, also written to dir/spec.json when the
// spec has an image: "kill" then needs it (after a restart of the
// dispatcher too) to kill the docker container. Other specs reach the
// supervisor on its stdin only: one file less per container.
func writeSpec(dir string, spec *runner.Spec) ([]byte, error) {
	body, err := json.Marshal(spec)
	if err == nil && spec.Image != "" {
		err = writeSmall(filepath.Join(dir, fileSpec), body)
	}
	return body, err
}

func readSpecFile(dir string) (runner.Spec, error) {
	b, err := os.ReadFile(filepath.Join(dir, fileSpec))
	if err != nil {
		return runner.Spec{}, err
	}
	return decodeSpec(b)
}
