// Package version is the version gpuaccept reports (gpuaccept version)
// and records in every results folder and manifest.
package version

import "runtime/debug"

// Of is the version of a binary whose build set set (-ldflags "-X
// main.version=..."; "" when not set): set itself, else the module
// version it was built at, else "dev-" and the first 12 characters of
// its VCS revision, else "dev".
func Of(set string) string {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	return of(set, bi)
}

// of is Of with the build information given (nil: none).
func of(set string, bi *debug.BuildInfo) string {
	if set != "" {
		return set
	}
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
