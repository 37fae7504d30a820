// Package version is the one version of this build, read from the Go
// build info, which `version`, `--version`, the runner's `runner version`
// and dispatch_tui_build_info all show.
package version

import (
	"runtime/debug"
	"sync"
)

// String returns the main module's version (v1.2.3, or the pseudo-version
// `go install` gives a commit), else for a build from a checkout
// "devel-" and the commit (12 hex digits, "-dirty" with local changes),
// else "devel".
var String = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(bi)
})

func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	v := "devel-" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}
