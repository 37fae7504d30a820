package view

import (
	"errors"
	"testing"
)

// Each verb's name reads back as the verb; other names are refused with
// the list of the verbs of that kind.
func TestParseVerbs(t *testing.T) {
	for _, v := range InstanceVerbs {
		got, err := ParseInstanceVerb(v.String())
		if err != nil || got != v {
			t.Errorf("ParseInstanceVerb(%q) = %v, %v; want %v", v.String(), got, err, v)
		}
	}
	for _, v := range ContainerVerbs {
		got, err := ParseContainerVerb(v.String())
		if err != nil || got != v {
			t.Errorf("ParseContainerVerb(%q) = %v, %v; want %v", v.String(), got, err, v)
		}
	}
	for _, tc := range []struct {
		parse func() error
		want  string
	}{
		{func() error { _, err := ParseInstanceVerb("reboot"); return err }, `unknown instance verb "reboot" (hold, drain, run or kill)`},
		{func() error { _, err := ParseInstanceVerb("release"); return err }, `unknown instance verb "release" (hold, drain, run or kill)`},
		{func() error { _, err := ParseContainerVerb("drain"); return err }, `unknown container verb "drain" (hold, release, kill or priority)`},
		{func() error { _, err := ParseContainerVerb(""); return err }, `unknown container verb "" (hold, release, kill or priority)`},
	} {
		err := tc.parse()
		var uv *UnknownVerbError
		if !errors.As(err, &uv) || err.Error() != tc.want || KindOf(err) != KindNotFound {
			t.Errorf("got %v (kind %s), want *UnknownVerbError %q (not found)", err, KindOf(err), tc.want)
		}
	}
	if !ContainerPriority.TakesValue() || ContainerKill.TakesValue() {
		t.Error("only priority takes a value")
	}
}
