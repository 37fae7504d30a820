package tui

import (
	"testing"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/keys"
)

// TestKeysChooseTypedVerbs: each verb key maps, once, to the typed verb
// the backend is sent, by the view it is pressed on; the dialogs' words
// come from that verb.
func TestKeysChooseTypedVerbs(t *testing.T) {
	for _, tc := range []struct {
		act     string
		v       viewID
		release bool
		want    chosen
		label   string
	}{
		{keys.Hold, vInstances, false, chosen{inst: view.InstanceHold}, "hold"},
		{keys.Drain, vInstances, false, chosen{inst: view.InstanceDrain}, "drain"},
		{keys.Run, vInstances, false, chosen{inst: view.InstanceRun}, "run"},
		{keys.Kill, vInstances, false, chosen{inst: view.InstanceKill}, "kill"},
		{keys.Hold, vContainers, false, chosen{ctr: view.ContainerHold}, "hold"},
		{keys.Hold, vContainers, true, chosen{ctr: view.ContainerRelease}, "release"},
		{keys.Kill, vContainers, false, chosen{ctr: view.ContainerKill}, "kill"},
		{keys.PrioUp, vContainers, false, chosen{ctr: view.ContainerPriority, step: 1}, "raise the priority"},
		{keys.PrioDown, vContainers, false, chosen{ctr: view.ContainerPriority, step: -1}, "lower the priority"},
	} {
		got, ok := choose(tc.act, tc.v, tc.release)
		if !ok || got != tc.want || got.label() != tc.label || got.view() != tc.v {
			t.Errorf("%s on view %d: %+v (%v) %q, want %+v %q", tc.act, tc.v, got, ok, got.label(), tc.want, tc.label)
		}
	}
	for _, tc := range []struct {
		act string
		v   viewID
	}{{keys.Drain, vContainers}, {keys.Run, vContainers}, {keys.PrioUp, vInstances}, {keys.Quit, vContainers}} {
		if got, ok := choose(tc.act, tc.v, false); ok {
			t.Errorf("%s on view %d chose %+v, want no verb", tc.act, tc.v, got)
		}
	}
	if got := title(chosen{ctr: view.ContainerKill}, 3, ""); got != "Kill 3 containers?" {
		t.Errorf("title %q", got)
	}
	if got := title(chosen{inst: view.InstanceDrain}, 1, "i-1"); got != "Drain instance i-1?" {
		t.Errorf("title %q", got)
	}
}
