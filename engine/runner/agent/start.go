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
	if err := runner.ValidateSpec(&spec); err != nil {
		return runner.Spec{}, err
	}
	if err := checkSpec(&spec); err != nil {
		return runner.Spec{}, err
	}
	return spec, nil
}

// checkSpec adds the agent's checks to ValidateSpec: what exec(2) and
// docker could not take literally.
func checkSpec(s *runner.Spec) error {
	if !safeID(s.ID) {
		return fmt.Errorf("invalid container id %q", s.ID)
	}
	for i, a := range s.Command {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("spec: command[%d] contains a NUL byte", i)
		}
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("spec: invalid env name %q (no '=' or NUL, not empty)", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("spec: env %s contains a NUL byte", k)
		}
	}
	if s.Image != "" && !validImage(s.Image) {
		return fmt.Errorf("spec: invalid image %q: want a docker reference such as debian:12 or registry/name@sha256:<digest>", s.Image)
	}
	if s.MaxRunTime < 0 {
		return fmt.Errorf("spec: negative max_run_time %v", s.MaxRunTime)
	}
	return nil
}

// validImage accepts docker image references: [A-Za-z0-9._/:@-], starting
// with a letter or digit (so it can never be taken for a docker option).
func validImage(s string) bool {
	if len(s) == 0 || len(s) > 512 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '/' || c == ':' || c == '@' || c == '-'):
		default:
			return false
		}
	}
	return true
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
