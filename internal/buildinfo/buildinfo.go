// Package buildinfo says which build is running: `agentsmithd version`,
// `agentsmithctl version` and the agentsmith_build_info metric read it, so
// an operator can tell which replicas run which code.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set by a release build:
//
//	go build -ldflags "-X github.com/agentsmithd/agentsmithd/internal/buildinfo.Version=v1.2.3 \
//	  -X github.com/agentsmithd/agentsmithd/internal/buildinfo.Commit=$(git rev-parse HEAD)"
//
// Left empty, they come from the module and VCS data Go embeds
// (debug.ReadBuildInfo): the module version, or "devel" for a build from a
// checkout, and the commit with "-dirty" when the tree had changes.
var (
	Version string
	Commit  string
)

// Info is one build's identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Get returns the running build's Info; fields it cannot learn are
// "unknown".
func Get() Info {
	info := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			info.Commit = rev
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the one line `version` prints.
func (i Info) String() string {
	return i.Version + " (commit " + i.Commit + ", " + i.GoVersion + ")"
}
