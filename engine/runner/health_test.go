package runner

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHealthCheckDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, want HealthCheck
	}{
		{HealthCheck{}, HealthCheck{Interval: 30 * time.Second, Timeout: 10 * time.Second, Retries: 3}},
		{HealthCheck{Interval: 2 * time.Second}, HealthCheck{Interval: 2 * time.Second, Timeout: 2 * time.Second, Retries: 3}},
		{HealthCheck{Interval: time.Minute, Timeout: 20 * time.Second, Retries: 1}, HealthCheck{Interval: time.Minute, Timeout: 20 * time.Second, Retries: 1}},
	} {
		if got := tc.in.WithDefaults(); got.Interval != tc.want.Interval || got.Timeout != tc.want.Timeout || got.Retries != tc.want.Retries {
			t.Errorf("%+v with defaults = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestValidateHealthCheck(t *testing.T) {
	ok := HealthCheck{Command: []string{"curl", "-f", "localhost"}, Interval: time.Second, Timeout: time.Second, Retries: 1}
	for _, tc := range []struct {
		name  string
		edit  func(h *HealthCheck)
		field string
	}{
		{"valid", func(*HealthCheck) {}, ""},
		{"no command", func(h *HealthCheck) { h.Command = nil }, "health_check.command"},
		{"empty program", func(h *HealthCheck) { h.Command = []string{""} }, "health_check.command[0]"},
		{"NUL in an argument", func(h *HealthCheck) { h.Command = []string{"a", "b\x00"} }, "health_check.command[1]"},
		{"not UTF-8", func(h *HealthCheck) { h.Command = []string{"\xff"} }, "health_check.command[0]"},
		{"argument too long", func(h *HealthCheck) { h.Command = []string{"a", strings.Repeat("x", MaxArgBytes+1)} }, "health_check.command[1]"},
		{"zero interval", func(h *HealthCheck) { h.Interval = 0 }, "health_check.interval"},
		{"negative timeout", func(h *HealthCheck) { h.Timeout = -1 }, "health_check.timeout"},
		{"timeout over the interval", func(h *HealthCheck) { h.Timeout = 2 * time.Second }, "health_check.timeout"},
		{"no retries", func(h *HealthCheck) { h.Retries = 0 }, "health_check.retries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ok
			h.Command = append([]string(nil), ok.Command...)
			tc.edit(&h)
			err := ValidateSpec(&Spec{ID: "c1", Command: []string{"true"}, HealthCheck: &h})
			var se *SpecError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field != "" && (!errors.As(err, &se) || se.Field != tc.field):
				t.Fatalf("got %v, want an error on %s", err, tc.field)
			}
		})
	}
}

// FuzzValidateHealthCheck: the validator never panics, refuses with a
// health_check field, and accepts only what the runner can run: a program,
// a positive interval, a timeout within it and at least one retry; and
// what it accepts survives the JSON trip to the instance.
func FuzzValidateHealthCheck(f *testing.F) {
	f.Add("curl\x1f-f", int64(time.Second), int64(time.Second), 3)
	f.Add("", int64(0), int64(0), 0)
	f.Add("a\x00", int64(-1), int64(5), -2)
	f.Add("\xff\x1fx", int64(10), int64(20), 1)
	f.Fuzz(func(t *testing.T, cmd string, interval, timeout int64, retries int) {
		h := HealthCheck{Interval: time.Duration(interval), Timeout: time.Duration(timeout), Retries: retries}
		if cmd != "" {
			h.Command = strings.Split(cmd, "\x1f")
		}
		s := Spec{ID: "c1", Command: []string{"true"}, HealthCheck: &h}
		err := ValidateSpec(&s)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || !strings.HasPrefix(se.Field, "health_check.") {
				t.Fatalf("refused without naming a health_check field: %v", err)
			}
			return
		}
		if len(h.Command) == 0 || h.Command[0] == "" || h.Interval <= 0 || h.Timeout <= 0 || h.Timeout > h.Interval || h.Retries < 1 {
			t.Fatalf("accepted %+v", h)
		}
		b, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		var back Spec
		if err := json.Unmarshal(b, &back); err != nil || ValidateSpec(&back) != nil || back.HealthCheck.Interval != h.Interval {
			t.Fatalf("after the JSON trip: %+v, %v", back.HealthCheck, err)
		}
	})
}
