package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultWorkRoot is consumer.work_dir when the config leaves it out,
// chosen where daemons keep state rather than under $TMPDIR, which every
// daemon on the host shares and tmp cleaners empty under running tickets:
//
//   - $STATE_DIRECTORY/work under systemd's StateDirectory= (the first
//     path when it names several, colon-separated: systemd.exec(5));
//   - else, for a user other than root, the XDG state dir:
//     $XDG_STATE_HOME/agentsmithd/work, by default
//     ~/.local/state/agentsmithd/work;
//   - else /var/lib/agentsmithd/work.
//
// The logs root and the git root sit beside it ({work}-logs, {work}-git).
func DefaultWorkRoot() string { return defaultWorkRoot(os.Getenv, os.Geteuid()) }

func defaultWorkRoot(getenv func(string) string, euid int) string {
	if dirs := getenv("STATE_DIRECTORY"); dirs != "" {
		if first, _, _ := strings.Cut(dirs, ":"); filepath.IsAbs(first) {
			return filepath.Join(first, "work")
		}
	}
	if euid != 0 {
		// The XDG Base Directory spec: a relative path is invalid and ignored.
		if state := getenv("XDG_STATE_HOME"); filepath.IsAbs(state) {
			return filepath.Join(state, "agentsmithd", "work")
		}
		if home := getenv("HOME"); filepath.IsAbs(home) {
			return filepath.Join(home, ".local", "state", "agentsmithd", "work")
		}
	}
	return "/var/lib/agentsmithd/work"
}
