package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tt := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128051100-67ad78c5dfd7"}}, "v0.0.0-20261128051100-67ad78c5dfd7"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "67ad78c5dfd7aaaabbbbccccddddeeeeffff0000"}, {Key: "vcs.modified", Value: "true"}}}, "devel-67ad78c5dfd7-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := fromBuildInfo(&tt.bi); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.bi.Main, got, tt.want)
		}
	}
}
