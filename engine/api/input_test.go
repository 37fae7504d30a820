package api

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"dispatch-tui/engine"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/runner"
)

// TestSubmitRefusesWhatTheRunnerWould: input the runner would refuse (or
// that no type can hold once the reserve is added) is refused at submit,
// with a 400 naming the field or a 422, and nothing is stored; input at the
// limits is accepted.
func TestSubmitRefusesWhatTheRunnerWould(t *testing.T) {
	e := newEnv(t)
	reserve := config.Default().Dispatcher.ReserveExtraRAM
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	args := func(list ...string) string {
		b, _ := json.Marshal(list)
		return string(b)
	}
	withRC := func(rc string) string { return `{"command":["x"],"runtime_constraints":{` + rc + `}}` }
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }

	longest := strings.Repeat("a", runner.MaxArgBytes)
	// Many one-byte arguments: within the body limit, past ARG_MAX (each
	// costs the kernel its NUL and a pointer too).
	tiny := make([]string, runner.MaxArgEnvBytes/10+1)
	tiny[0] = "x"
	for i := 1; i < len(tiny); i++ {
		tiny[i] = "1"
	}
	// Within the kernel's limits, but '<' is six bytes in the runner's JSON.
	// (Written out by hand: json.Marshal would escape them in the body too.)
	angles := `["x"` + strings.Repeat(`,"`+strings.Repeat("<", runner.MaxArgBytes)+`"`, 5) + `]`

	for _, tc := range []struct {
		name  string
		body  string
		want  int
		field string
		msg   string // substring of the error
	}{
		// argv, env and image as the runner checks them
		{"NUL in argv", `{"command":["echo","a","b\u0000c"]}`, 400, "command[2]", "command[2]: contains a NUL byte"},
		{"NUL in argv0", `{"command":["ec\u0000ho"]}`, 400, "command[0]", "contains a NUL byte"},
		{"NUL in env value", `{"command":["x"],"env":{"A":"a\u0000b"}}`, 400, "env", `value of "A" contains a NUL byte`},
		{"= in env name", `{"command":["x"],"env":{"A=B":"c"}}`, 400, "env", `env: invalid name "A=B"`},
		{"NUL in env name", `{"command":["x"],"env":{"A\u0000":"c"}}`, 400, "env", `invalid name "A\x00"`},
		{"empty env name", `{"command":["x"],"env":{"":"c"}}`, 400, "env", `invalid name ""`},
		{"NUL in image", `{"command":["x"],"image":"debian\u0000"}`, 400, "image", "invalid reference"},
		{"image that is a docker option", `{"command":["x"],"image":"--privileged"}`, 400, "image", "invalid reference"},
		{"image with spaces", `{"command":["x"],"image":"debian -v /:/host"}`, 400, "image", "invalid reference"},
		{"image too long", `{"command":["x"],"image":"` + strings.Repeat("a", runner.MaxImageBytes+1) + `"}`, 400, "image", "invalid reference"},
		{"empty argv0", `{"command":["","x"]}`, 400, "command", "must not be empty"},
		// the kernel's size limits
		{"1 MB single argument", `{"command":["echo",` + str(strings.Repeat("a", 1000000)) + `]}`, 400, "command[1]", "MAX_ARG_STRLEN"},
		{"argument one byte over MAX_ARG_STRLEN", `{"command":["echo",` + str(longest+"a") + `]}`, 400, "command[1]", "131072 bytes"},
		{"env variable over MAX_ARG_STRLEN", `{"command":["x"],"env":{"A":` + str(longest) + `}}`, 400, "env", "MAX_ARG_STRLEN"},
		{"argv past ARG_MAX", `{"command":` + args(tiny...) + `}`, 400, "command", "ARG_MAX"},
		{"spec past the runner's 1 MiB of JSON", `{"command":` + angles + `}`, 400, "command", "runner's JSON"},
		// other fields
		{"negative max_run_time", `{"command":["x"],"scheduling":{"max_run_time":-1}}`, 400, "scheduling.max_run_time", "must not be negative"},
		{"name too long", `{"command":["x"],"name":"` + strings.Repeat("n", 257) + `"}`, 400, "name", "at most 256"},
		{"NUL in name", `{"command":["x"],"name":"a\u0000b"}`, 400, "name", "NUL"},
		// sizes: negative is 400, too large for every type is 422, however large
		{"negative vcpus", withRC(`"vcpus":-1`), 400, "runtime_constraints.vcpus", "must not be negative"},
		{"most negative ram", withRC(`"ram":` + i64(math.MinInt64)), 400, "runtime_constraints.ram", "must not be negative"},
		{"negative scratch", withRC(`"scratch":-1`), 400, "runtime_constraints.scratch", "must not be negative"},
		{"negative gpus", withRC(`"gpus":-1`), 400, "runtime_constraints.gpus", "must not be negative"},
		{"ram past int64", withRC(`"ram":9223372036854775808`), 400, "runtime_constraints.ram", "want an integer"},
		{"largest ram", withRC(`"ram":` + i64(math.MaxInt64)), 422, "", "no instance type fits"},
		{"ram overflowing with the reserve by one", withRC(`"ram":` + i64(math.MaxInt64-reserve+1)), 422, "", "no instance type fits"},
		{"ram just not overflowing with the reserve", withRC(`"ram":` + i64(math.MaxInt64-reserve)), 422, "", "no instance type fits"},
		{"ram one byte over the largest type", withRC(`"ram":` + i64(32*gib-reserve+1)), 422, "", "no instance type fits"},
		{"largest vcpus", withRC(`"vcpus":` + strconv.Itoa(math.MaxInt)), 422, "", "no instance type fits"},
		{"largest scratch", withRC(`"scratch":` + i64(math.MaxInt64)), 422, "", "no instance type fits"},
		{"largest gpus", withRC(`"gpus":` + strconv.Itoa(math.MaxInt)), 422, "", "no instance type fits"},
		// accepted: at the limits, and text the terminal must not see raw
		// (escaped when shown, see termsafe)
		{"argument at MAX_ARG_STRLEN", `{"command":["echo",` + str(longest) + `]}`, 201, "", ""},
		{"ram filling the largest type", withRC(`"vcpus":1,"ram":` + i64(32*gib-reserve)), 201, "", ""},
		{"control characters in name and command", `{"name":"\u001b[31mred\r\u0007\u009b","command":["echo","\u001b]0;title\u0007"]}`, 201, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := e.req(t, "POST", "/v1/containers", strings.NewReader(tc.body), nil)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.want, data)
			}
			if tc.want == http.StatusCreated {
				return
			}
			var eb errorBody
			if err := json.Unmarshal(data, &eb); err != nil || eb.Error == "" {
				t.Fatalf("error body %.300q: %v", data, err)
			}
			if eb.Field != tc.field {
				t.Errorf("field = %q, want %q (%.300s)", eb.Field, tc.field, eb.Error)
			}
			if !strings.Contains(eb.Error, tc.msg) {
				t.Errorf("message %.300q does not contain %q", eb.Error, tc.msg)
			}
		})
	}
	if _, n := e.eng.Containers(engine.ListOptions{}); n != 3 {
		t.Errorf("%d containers stored, want the 3 accepted", n)
	}
}
