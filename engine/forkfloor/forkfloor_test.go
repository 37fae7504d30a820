package forkfloor

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		spawners int
		wantErr  string // "" = a measurement of at least one spawn per spawner
	}{
		{"true, one spawner", DefaultCommand, 1, ""},
		{"true, two spawners", DefaultCommand, 2, ""},
		{"a command that fails", "/usr/bin/false", 2, "want exit 0"},
		{"a command that does not exist", "/nonexistent/true", 1, "start /nonexistent/true"},
		{"no spawners", DefaultCommand, 0, "at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Measure(context.Background(), tc.path, tc.spawners, 200*time.Millisecond)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v (%v), want an error containing %q", err, r, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Spawners != tc.spawners || r.Spawns < tc.spawners || r.Elapsed <= 0 || r.Rate() <= 0 {
				t.Fatalf("implausible measurement: %+v (rate %v)", r, r.Rate())
			}
		})
	}
}

func TestMeasureStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Measure(ctx, DefaultCommand, 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r.Spawns != 0 {
		t.Fatalf("spawned %d after the context was done", r.Spawns)
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		r    Result
		want float64
	}{
		{Result{Spawns: 3000, Elapsed: 2 * time.Second}, 1500},
		{Result{Spawns: 10, Elapsed: 0}, 0},
	}
	for _, tc := range tests {
		if got := tc.r.Rate(); got != tc.want {
			t.Errorf("%+v: got %v, want %v", tc.r, got, tc.want)
		}
	}
}
