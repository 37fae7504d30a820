package runner

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestValidateSpec(t *testing.T) {
	big := strings.Repeat("a", MaxArgBytes)
	// Enough arguments of 64 KiB to pass MaxArgEnvBytes, each within
	// MaxArgBytes.
	manyArgs := []string{"true"}
	for range MaxArgEnvBytes/(64<<10) + 1 {
		manyArgs = append(manyArgs, strings.Repeat("b", 64<<10))
	}
	// Tiny arguments cost the kernel a pointer each: this many pass the
	// JSON limit of the spec but not the kernel's.
	tiny := make([]string, MaxArgEnvBytes/(2+ptrBytes)+1)
	tiny[0] = "true"
	for i := 1; i < len(tiny); i++ {
		tiny[i] = "1"
	}
	// Within every exec(2) limit, but JSON escapes '<' as six bytes.
	angles := []string{"true"}
	for range 2 {
		angles = append(angles, strings.Repeat("<", MaxArgBytes))
	}
	cases := []struct {
		name  string
		spec  Spec
		field string // "" = valid
		msg   string
	}{
		{"minimal", Spec{ID: "c1", Command: []string{"true"}}, "", ""},
		{"image and env", Spec{ID: "c1", Command: []string{"sh", "-c", "echo $A"}, Env: map[string]string{"A": "1"},
			Image: "registry.example/a/b:1.2@sha256:abc", MaxRunTime: time.Minute}, "", ""},
		{"argument at the limit", Spec{ID: "c1", Command: []string{"echo", big}}, "", ""},
		{"env at the limit", Spec{ID: "c1", Command: []string{"env"}, Env: map[string]string{"A": big[:MaxArgBytes-2]}}, "", ""},
		{"controls and unicode are fine", Spec{ID: "c1", Command: []string{"echo", "\x1b[31m\r\x07\u009b", "é"}}, "", ""},

		{"bad id", Spec{ID: "../x", Command: []string{"true"}}, "id", `invalid container id "../x"`},
		{"dot id", Spec{ID: "..", Command: []string{"true"}}, "id", "invalid container id"},
		{"no command", Spec{ID: "c1"}, "command", "must not be empty"},
		{"empty argv0", Spec{ID: "c1", Command: []string{""}}, "command[0]", "must not be empty"},
		{"NUL in argv", Spec{ID: "c1", Command: []string{"echo", "a", "b\x00c"}}, "command[2]", "contains a NUL byte"},
		{"bad UTF-8 in argv", Spec{ID: "c1", Command: []string{"echo", "\xff"}}, "command[1]", "not valid UTF-8"},
		{"argument over the limit", Spec{ID: "c1", Command: []string{"echo", big + "a"}}, "command[1]", "MAX_ARG_STRLEN"},
		{"1 MB argument", Spec{ID: "c1", Command: []string{"echo", strings.Repeat("a", 1<<20)}}, "command[1]", "1048576 bytes"},
		{"env name with =", Spec{ID: "c1", Command: []string{"true"}, Env: map[string]string{"A=B": "c"}}, "env", `invalid name "A=B"`},
		{"env name with NUL", Spec{ID: "c1", Command: []string{"true"}, Env: map[string]string{"A\x00": "c"}}, "env", `invalid name "A\x00"`},
		{"empty env name", Spec{ID: "c1", Command: []string{"true"}, Env: map[string]string{"": "c"}}, "env", `invalid name ""`},
		{"NUL in env value", Spec{ID: "c1", Command: []string{"true"}, Env: map[string]string{"A": "a\x00"}}, "env", `value of "A" contains a NUL byte`},
		{"env over the limit", Spec{ID: "c1", Command: []string{"env"}, Env: map[string]string{"A": big}}, "env", "MAX_ARG_STRLEN"},
		{"env over the limit with docker's prefix", Spec{ID: "c1", Command: []string{"env"}, Image: "debian",
			Env: map[string]string{"A": big[:MaxArgBytes-2]}}, "env", "MAX_ARG_STRLEN"},
		{"first bad env by name", Spec{ID: "c1", Command: []string{"true"}, Env: map[string]string{"B=": "", "A=": "", "C": "\x00"}}, "env", `"A="`},
		{"image that is an option", Spec{ID: "c1", Command: []string{"true"}, Image: "--privileged"}, "image", "invalid reference"},
		{"image with a space", Spec{ID: "c1", Command: []string{"true"}, Image: "debian -v /:/h"}, "image", "invalid reference"},
		{"image with NUL", Spec{ID: "c1", Command: []string{"true"}, Image: "debian\x00"}, "image", "invalid reference"},
		{"image too long", Spec{ID: "c1", Command: []string{"true"}, Image: strings.Repeat("a", MaxImageBytes+1)}, "image", "invalid reference"},
		{"negative max_run_time", Spec{ID: "c1", Command: []string{"true"}, MaxRunTime: -1}, "max_run_time", "negative"},
		{"argv over ARG_MAX", Spec{ID: "c1", Command: manyArgs}, "command", "ARG_MAX"},
		{"many tiny arguments", Spec{ID: "c1", Command: tiny}, "command", "ARG_MAX"},
		{"JSON over 1 MiB", Spec{ID: "c1", Command: angles}, "command", "runner's JSON"},
	}
	for _, tc := range cases {
		err := ValidateSpec(&tc.spec)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want a *SpecError", tc.name, err)
			continue
		}
		if se.Field != tc.field || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%s: got field %q, %q; want %q containing %q", tc.name, se.Field, clipped(se.Msg), tc.field, tc.msg)
		}
		// Without the id (at submit) the verdict is the same, except on
		// the id itself.
		if tc.field != "id" {
			var se2 *SpecError
			if err2 := ValidateContent(&tc.spec); !errors.As(err2, &se2) || se2.Field != se.Field {
				t.Errorf("%s: ValidateContent says %v, ValidateSpec %v", tc.name, err2, err)
			}
		}
	}
}

func clipped(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TestSpecJSONBytes checks the shortcut against the real encoding: the bound
// is never below it, and past the limit the exact length is used.
func TestSpecJSONBytes(t *testing.T) {
	for _, s := range []Spec{
		{Command: []string{"true"}},
		{Command: []string{"<>&\"\\\u2028\x01é"}, Env: map[string]string{"A<": "\n"}, Image: "a", MaxRunTime: time.Hour},
		{Command: []string{strings.Repeat("<", 200000)}},
	} {
		for _, idLen := range []int{1, maxIDBytes} {
			c := s
			c.ID = strings.Repeat("x", idLen)
			b, _ := json.Marshal(&c)
			got := specJSONBytes(&s, idLen)
			if got < len(b) || (got > MaxSpecBytes && got != len(b)) {
				t.Errorf("%.40q id %d: specJSONBytes %d, encoded %d", s.Command[0], idLen, got, len(b))
			}
		}
	}
}

// TestValidateContentAssumesTheLongestID: a spec accepted without an id
// still fits the runner's stdin once it has the longest one.
func TestValidateContentAssumesTheLongestID(t *testing.T) {
	// Grow one argument of '<' (six bytes each as JSON) until the spec
	// with the longest id is just over MaxSpecBytes.
	s := Spec{Command: []string{"true"}, Env: map[string]string{}}
	for i := 0; ; i++ {
		s.Env["V"+strconv.Itoa(i)] = strings.Repeat("<", 20000)
		if specJSONBytes(&s, maxIDBytes) > MaxSpecBytes {
			break
		}
	}
	if ValidateContent(&s) == nil {
		t.Fatal("ValidateContent accepted a spec over the limit")
	}
}
