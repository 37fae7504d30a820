// The checks the key table (keys.go) uses for more than one key, and the
// site a check reports to.

package config

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"dispatch-tui/cloud"
)

// site is the value being checked: the Config it is in, the index of its
// element below an array of tables, and its key as errors name it
// ("instance_type[1].ram").
type site struct {
	c       *Config
	i       int
	key     string
	lineKey string
	errs    *[]*Error
}

// bad reports a problem with the value.
func (s *site) bad(format string, args ...any) {
	*s.errs = append(*s.errs, &Error{Key: s.key, Msg: fmt.Sprintf(format, args...), lineKey: s.lineKey})
}

// badEntry reports a problem with one key of a table of strings.
func (s *site) badEntry(k, format string, args ...any) {
	*s.errs = append(*s.errs, &Error{Key: joinKey(s.key, k), Msg: fmt.Sprintf(format, args...)})
}

func isInf[T int | int64 | float64](v T) bool {
	f, ok := any(v).(float64)
	return ok && math.IsInf(f, 0)
}

func atLeast[T int | int64 | float64](lo T) check[T] {
	return func(v T, s *site) {
		if !(v >= lo) || isInf(v) {
			s.bad("must be >= %v (got %v)", lo, v)
		}
	}
}

func between[T int | float64](lo, hi T) check[T] {
	return func(v T, s *site) {
		if !(v >= lo && v <= hi) {
			s.bad("must be between %v and %v (got %v)", lo, hi, v)
		}
	}
}

func positive[T float64 | time.Duration](v T, s *site) {
	if !(v > 0) || isInf(float64(v)) {
		s.bad("must be > 0 (got %v)", v)
	}
}

func notNegative[T int64 | time.Duration](v T, s *site) {
	if v < 0 {
		s.bad("must not be negative (got %v)", v)
	}
}

func notEmpty(v string, s *site) {
	if v == "" {
		s.bad("must not be empty")
	}
}

func oneOf(allowed ...string) check[string] {
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = strconv.Quote(a)
	}
	list := strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
	return func(v string, s *site) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		s.bad("must be %s (got %q)", list, v)
	}
}

// noControl checks a path on this machine that the config names (empty
// allowed): a control character, NUL above all, is no part of a real path
// (a NUL ends the name the kernel sees) and only hides what is named.
// Every key of kindPath gets it.
func noControl(v string, s *site) {
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		s.bad("must not contain a control character such as NUL or a newline (got %q): name the path with printable characters", v)
	}
}

// hostPortProblem says what is wrong with a "host:port" address; lowPort
// is the smallest port allowed (0 lets the system choose, for a listen
// address). "" = nothing.
func hostPortProblem(addr string, lowPort int) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("must be host:port (got %q)", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < lowPort || n > 65535 {
		return fmt.Sprintf("port must be a number between %d and 65535 (got %q)", lowPort, addr)
	}
	return ""
}

// runnerPath checks a path on the instances. A relative path with a slash
// ("./runner", "bin/runner") works: every command runs in the host's
// work_dir (or the login directory, or a local instance's home). A bare
// name does not: the shell looks it up in $PATH, so the runner would be
// installed in one place and not found in the other on every boot.
func runnerPath(v string, s *site) {
	switch {
	case v == "":
		s.bad("must not be empty")
	case !strings.Contains(v, "/"):
		s.bad("must be an absolute path, or relative to the work_dir with a slash (\"./%s\"): a bare name is looked up in $PATH, where the runner is not installed (got %q)", v, v)
	case strings.ContainsAny(v, "'\n"):
		s.bad("must not contain a single quote or newline (got %q)", v)
	}
}

// userName checks a user the instances' user-data creates.
func userName(v string, s *site) {
	if !cloud.PortableUserName(v) {
		s.bad("must be a user name: a-z, 0-9, _ and -, starting with a letter or _, at most 32 (got %q)", v)
	}
}
