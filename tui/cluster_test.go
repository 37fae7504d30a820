package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

// TestHeaderShowsTheCluster: with a cluster reported, the header's first
// line names the node talked to and its role, the leader and its epoch,
// and each standby with the age of its last heartbeat; with no leader it
// says NONE; a dispatcher alone (or no cluster) leaves the line as it was.
func TestHeaderShowsTheCluster(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 200, 30)
	s := fakeSnapshot(3, 5)
	cl := view.Cluster{Leader: "a", Epoch: 4, Self: "b", Nodes: []view.ClusterNode{
		{Name: "a", Role: view.RoleLeader, LastSeen: t0.Add(-time.Second), Epoch: 4},
		{Name: "b", Role: view.RoleStandby, LastSeen: t0.Add(-2 * time.Second), Epoch: 4},
		{Name: "c\x1b[2J", Role: view.RoleStandby, LastSeen: t0.Add(-5 * time.Minute), Epoch: 3},
	}}
	s.Cluster = &cl
	load(t, m, fb, s)
	first := lines(m)[0]
	want := `dispatch-tui  fake (test)  node b (standby)  leader a epoch 4  standbys b 2s, c\x1b[2J 5m0s`
	if !strings.HasPrefix(first, want) {
		t.Fatalf("header %q; want it to start %q", first, want)
	}
	noLeader := cl
	noLeader.Leader, noLeader.Self = "", "a"
	s2 := *s
	s2.Cluster = &noLeader
	load(t, m, fb, &s2)
	if first := lines(m)[0]; !strings.Contains(first, "node a (standby)  leader NONE epoch 4  standbys a 1s, b 2s, c") {
		t.Fatalf("header without a leader %q", first)
	}
	for _, c := range []*view.Cluster{nil, {Leader: "n1", Self: "n1", Nodes: []view.ClusterNode{{Name: "n1", Role: view.RoleLeader}}}} {
		s3 := *s
		s3.Cluster = c
		load(t, m, fb, &s3)
		if first := lines(m)[0]; strings.Contains(first, "node ") || strings.Contains(first, "leader") {
			t.Fatalf("header of a dispatcher alone (%+v) %q; want no cluster word", c, first)
		}
	}
}

// TestTakeoverShowsABanner: when the leader changes or its epoch rises
// between two reads of the cluster, the flash line names the new leader
// and epoch and the one before, for takeoverFor (longer than a key's
// flash); the same cluster read again, or a first read, shows none.
func TestTakeoverShowsABanner(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 200, 30)
	type timer struct {
		d  time.Duration
		fn func(time.Time) tea.Msg
	}
	var timers []timer
	m.tick = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		timers = append(timers, timer{d, fn})
		return stillTick(d, fn)
	}
	flashLine := func() string { return lines(m)[headerLines-2] }
	at := func(leader string, epoch int64) *backend.Snapshot {
		s := fakeSnapshot(3, 5)
		s.Cluster = &view.Cluster{Leader: leader, Epoch: epoch, Self: "b", Nodes: []view.ClusterNode{
			{Name: "a", Role: view.RoleStandby, LastSeen: t0, Epoch: epoch},
			{Name: "b", Role: view.RoleStandby, LastSeen: t0, Epoch: epoch},
		}}
		return s
	}
	load(t, m, fb, at("a", 6))
	load(t, m, fb, at("a", 6))
	if f := flashLine(); strings.Contains(f, "leader") {
		t.Fatalf("flash line %q after the same cluster read twice; want no banner", f)
	}
	timers = nil
	load(t, m, fb, at("b\x1b[2J", 7))
	want := `takeover: leader now b\x1b[2J (epoch 7), was a (epoch 6)`
	if f := flashLine(); !strings.Contains(f, want) {
		t.Fatalf("flash line %q after a takeover; want %q", f, want)
	}
	var end tea.Msg
	for _, tm := range timers {
		if tm.d == takeoverFor {
			end = tm.fn(t0)
		}
	}
	if end == nil || takeoverFor <= flashFor {
		t.Fatalf("timers armed %v; want one of takeoverFor (%v, longer than a flash's %v)", timers, takeoverFor, flashFor)
	}
	load(t, m, fb, at("b\x1b[2J", 7))
	if f := flashLine(); !strings.Contains(f, want) {
		t.Fatalf("flash line %q on the next read; want the banner kept until its time is up", f)
	}
	m.Update(end)
	if f := flashLine(); strings.Contains(f, "takeover") {
		t.Fatalf("flash line %q once its time is up; want it gone", f)
	}
	// The same leader with a higher epoch lost the lease and took it back.
	load(t, m, fb, at("b\x1b[2J", 9))
	if f := flashLine(); !strings.Contains(f, `leader now b\x1b[2J (epoch 9), was b\x1b[2J (epoch 7)`) {
		t.Fatalf("flash line %q after the leader took the lease back; want a banner", f)
	}
	// None led (the lease ran out), then c: the banner says none led.
	load(t, m, fb, at("", 9))
	load(t, m, fb, at("c", 10))
	if f := flashLine(); !strings.Contains(f, "takeover: leader now c (epoch 10), was none") {
		t.Fatalf("flash line %q after a takeover from no leader; want a banner", f)
	}
}
