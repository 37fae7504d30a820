// A container spec's limits and checks, shared by the runner and submit.

package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on what a spec may hold. The runner refuses a spec past any of them
// before it starts anything, and the dispatcher refuses it at submit with the
// same checks (ValidateContent), so no container is accepted that could never
// start.
const (
	// MaxSpecBytes bounds the JSON of one spec on the runner's stdin.
	MaxSpecBytes = 1 << 20
	// MaxArgBytes is the longest single argument or NAME=value environment
	// string exec(2) takes on Linux: MAX_ARG_STRLEN (32 pages of 4 KiB)
	// less the terminating NUL.
	MaxArgBytes = 32*4096 - 1
	// MaxArgEnvBytes bounds argv and the environment together, counted as
	// the kernel counts them (each string with its NUL, plus a pointer).
	// The kernel allows a quarter of the stack limit: 2 MiB with the usual
	// 8 MiB. 64 KiB of that is left for what the runner adds (PATH, HOME,
	// the docker words, the program's path).
	MaxArgEnvBytes = 2<<20 - 64<<10
	// MaxImageBytes bounds an image reference.
	MaxImageBytes = 512
	// maxIDBytes is the longest id ValidID accepts.
	maxIDBytes = 128
	// ptrBytes is what each argv or environment string costs the kernel
	// besides its bytes and NUL: its pointer (instances are 64-bit).
	ptrBytes = 8
	// dockerEnvPrefix starts each variable passed to "docker run", where
	// the environment travels as arguments.
	dockerEnvPrefix = "--env="
)

// SpecError is one field of a spec the runner would refuse, named as in a
// submitted container (command[2], env, image, max_run_time).
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Msg }

func specErr(field, format string, args ...any) *SpecError {
	return &SpecError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ValidateSpec checks a whole spec as the runner receives it: its id, and
// everything ValidateContent checks. The runner runs what it accepts.
func ValidateSpec(s *Spec) error {
	if !ValidID(s.ID) {
		return specErr("id", "invalid container id %q: want [A-Za-z0-9_.-]{1,128}, not . or ..", s.ID)
	}
	return validate(s, len(s.ID))
}

// ValidateContent checks everything of s but its id, which a submitted
// container does not have yet: command, env and image are what exec(2) and
// docker can take literally, within the kernel's size limits, and the spec
// fits the runner's stdin even with the longest id.
func ValidateContent(s *Spec) error {
	return validate(s, maxIDBytes)
}

func validate(s *Spec, idLen int) error {
	if len(s.Command) == 0 {
		return specErr("command", "must not be empty")
	}
	for i, a := range s.Command {
		if err := checkString(fmt.Sprintf("command[%d]", i), a); err != nil {
			return err
		}
		if len(a) > MaxArgBytes {
			return specErr(fmt.Sprintf("command[%d]", i), "is %d bytes, more than the kernel takes in one argument (%d, MAX_ARG_STRLEN)", len(a), MaxArgBytes)
		}
	}
	if s.Command[0] == "" {
		return specErr("command[0]", "must not be empty (it names the program to run)")
	}
	if err := checkEnv(s); err != nil {
		return err
	}
	if s.Image != "" && !validImage(s.Image) {
		return specErr("image", "invalid reference %q: want a docker reference such as debian:12 or registry/name@sha256:<digest> "+
			"(letters, digits and ._/:@-, starting with a letter or digit, at most %d bytes)", s.Image, MaxImageBytes)
	}
	if s.MaxRunTime < 0 {
		return specErr("max_run_time", "must not be negative")
	}
	if s.HealthCheck != nil {
		if err := validateHealth(s.HealthCheck); err != nil {
			return err
		}
	}
	if n := argEnvBytes(s); n > MaxArgEnvBytes {
		return specErr("command", "command and env take %d bytes as exec(2) counts them (each string, its NUL and a pointer), "+
			"more than the limit of %d (ARG_MAX, less room for what the runner adds)", n, MaxArgEnvBytes)
	}
	if h := s.HealthCheck; h != nil {
		hs := Spec{Command: h.Command, Env: s.Env, Image: s.Image}
		if n := argEnvBytes(&hs); n > MaxArgEnvBytes {
			return specErr("health_check.command", "the health check and env take %d bytes as exec(2) counts them, more than the limit of %d", n, MaxArgEnvBytes)
		}
	}
	if n := specJSONBytes(s, idLen); n > MaxSpecBytes {
		return specErr("command", "command, env and image take %d bytes as the runner's JSON, more than its limit of %d (1 MiB)", n, MaxSpecBytes)
	}
	return nil
}

// checkString refuses what cannot travel to a program intact: a NUL ends a
// C string, and the runner protocol is JSON, which carries UTF-8 only.
func checkString(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return specErr(field, "contains a NUL byte")
	}
	if !utf8.ValidString(s) {
		return specErr(field, "is not valid UTF-8")
	}
	return nil
}

// checkEnv checks every variable and reports the first bad one by name, so
// the same spec always gets the same error.
func checkEnv(s *Spec) error {
	prefix := 0
	if s.Image != "" {
		prefix = len(dockerEnvPrefix)
	}
	var worst *SpecError
	worstKey := ""
	for k, v := range s.Env {
		var err *SpecError
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00") || !utf8.ValidString(k):
			err = specErr("env", "invalid name %q (not empty, no '=' or NUL byte, UTF-8)", k)
		case strings.IndexByte(v, 0) >= 0:
			err = specErr("env", "value of %q contains a NUL byte", k)
		case !utf8.ValidString(v):
			err = specErr("env", "value of %q is not valid UTF-8", k)
		case prefix+len(k)+1+len(v) > MaxArgBytes:
			err = specErr("env", "%q=value is %d bytes, more than the kernel takes in one string (%d, MAX_ARG_STRLEN)",
				k, prefix+len(k)+1+len(v), MaxArgBytes)
		}
		if err != nil && (worst == nil || k < worstKey) {
			worst, worstKey = err, k
		}
	}
	if worst != nil {
		return worst
	}
	return nil
}

// validImage accepts docker image references: [A-Za-z0-9._/:@-], starting
// with a letter or digit (so it can never be taken for a docker option).
func validImage(s string) bool {
	if len(s) == 0 || len(s) > MaxImageBytes {
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

// argEnvBytes is what the spec's argv and environment cost the kernel at
// exec(2), the way the runner passes them: the command as argv and the env
// as the environment, or with an image, both as arguments of "docker run".
func argEnvBytes(s *Spec) int {
	n := 0
	for _, a := range s.Command {
		n += len(a) + 1 + ptrBytes
	}
	prefix := 0
	if s.Image != "" {
		prefix = len(dockerEnvPrefix)
		n += len(s.Image) + 1 + ptrBytes
	}
	for k, v := range s.Env {
		n += prefix + len(k) + 1 + len(v) + 1 + ptrBytes
	}
	return n
}

// specJSONBytes is the length of s as JSON with an id of idLen bytes, or a
// bound on it when that bound is within MaxSpecBytes: JSON escaping makes a
// string at most six times longer, so only a spec near the limit is encoded.
func specJSONBytes(s *Spec, idLen int) int {
	const overhead = 256 // field names, punctuation, id, max_run_time
	bound := overhead + 6*(len(s.Image)+idLen)
	for _, a := range s.Command {
		bound += 3 + 6*len(a)
	}
	for k, v := range s.Env {
		bound += 6 + 6*(len(k)+len(v))
	}
	if s.HealthCheck != nil {
		bound += 128 // field names and numbers
		for _, a := range s.HealthCheck.Command {
			bound += 3 + 6*len(a)
		}
	}
	if bound <= MaxSpecBytes {
		return bound
	}
	c := *s
	c.ID = strings.Repeat("x", idLen)
	b, err := json.Marshal(&c)
	if err != nil {
		return bound
	}
	return len(b)
}
