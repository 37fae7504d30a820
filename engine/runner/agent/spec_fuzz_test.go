//go:build linux

package agent

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// FuzzValidateSpec: the shared spec validator never panics; what it
// accepts the runner's own spec decoding accepts unchanged after the JSON
// trip to the instance, and it runs within the kernel's exec(2) limits the
// way the runner passes it (with or without docker); what it accepts
// without an id (at submit) it accepts with any valid one; what it refuses
// it refuses with a *runner.SpecError naming a field.
//
// Fields separate with \x1f; grow repeats the last argument to reach the
// size limits.
func FuzzValidateSpec(f *testing.F) {
	f.Add("c1", "true", "A", "1", "", int64(0), uint16(0))
	f.Add("c1", "echo\x1fa\x00b", "A=B\x1fC", "x\x1f\x00", "debian:12", int64(time.Minute), uint16(0))
	f.Add("..", "sh\x1f-c\x1fexit 3", "", "", "--privileged", int64(-1), uint16(0))
	f.Add("c-0123", "echo\x1f<", "PATH", "/bin", "registry/a@sha256:00", int64(0), uint16(9000))
	f.Add("x", "\x1b[31m\x1f\r\x07\u009b\x1f\xff", "\xff", "\u2028", "a b", int64(1), uint16(300))
	f.Add("c1", "echo\x1fab", "", "", "", int64(0), uint16(65535))
	f.Fuzz(func(t *testing.T, id, cmd, keys, vals, image string, maxRunTime int64, grow uint16) {
		spec := runner.Spec{ID: id, Image: image, MaxRunTime: time.Duration(maxRunTime)}
		if cmd != "" {
			spec.Command = strings.Split(cmd, "\x1f")
		}
		if last := len(spec.Command) - 1; last >= 0 && grow > 0 && len(spec.Command[last])*int(grow) <= 3<<20 {
			spec.Command[last] = strings.Repeat(spec.Command[last], int(grow))
		}
		if keys != "" {
			spec.Env = map[string]string{}
			vs := strings.Split(vals, "\x1f")
			for i, k := range strings.Split(keys, "\x1f") {
				if i < len(vs) {
					spec.Env[k] = vs[i]
				} else {
					spec.Env[k] = ""
				}
			}
		}
		content := runner.ValidateContent(&spec)
		err := runner.ValidateSpec(&spec)
		if err != nil {
			var se *runner.SpecError
			if !errors.As(err, &se) || se.Field == "" || se.Msg == "" {
				t.Fatalf("refused without naming a field: %v", err)
			}
			if content == nil && runner.ValidID(spec.ID) {
				t.Fatalf("accepted at submit, refused with id %q: %v", spec.ID, err)
			}
			return
		}
		body, merr := json.Marshal(&spec)
		if merr != nil {
			t.Fatal(merr)
		}
		if len(body) > maxSpecBytes {
			t.Fatalf("accepted a spec of %d bytes of JSON", len(body))
		}
		got, derr := decodeSpec(body)
		if derr != nil {
			t.Fatalf("accepted, but the runner refuses it: %v", derr)
		}
		if len(spec.Env) == 0 {
			spec.Env = nil
		}
		if !reflect.DeepEqual(got, spec) {
			t.Fatalf("changed on the way to the runner:\n got %+v\nwant %+v", got, spec)
		}
		for _, docker := range []string{"", "/usr/bin/docker"} {
			if docker != "" && spec.Image == "" {
				continue
			}
			argv, env := commandLine(spec, docker, "/home/user")
			total := 0
			for _, s := range append(argv, env...) {
				if len(s) > runner.MaxArgBytes {
					t.Fatalf("accepted, but a string of %d bytes goes to exec(2)", len(s))
				}
				total += len(s) + 1 + 8
			}
			// The kernel's limit with an 8 MiB stack; the validator keeps
			// 64 KiB of it for what the runner adds.
			if total > 2<<20 {
				t.Fatalf("accepted, but exec(2) gets %d bytes of argv and env", total)
			}
		}
	})
}
