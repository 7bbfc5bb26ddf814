package lifecycle

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WorkDir is the ticket's working directory under root. It is kept between
// attempts so a retry can resume from what the previous attempt left.
// Each part is one path segment under root, never "." or "..", so no
// project or ticket name can move it elsewhere.
func WorkDir(root string, ref platforms.Ref) string {
	return filepath.Join(root, pathSegment(ref.Project), TicketDirName(ref.Platform, ref.ID))
}

// TicketDirName is the ticket's directory name under its project's, in the
// work root and the logs dir.
func TicketDirName(platform, id string) string {
	return pathSegment(platform + "_" + id)
}

func pathSegment(s string) string {
	s = unsafePath.ReplaceAllString(s, "_")
	if strings.Trim(s, ".") == "" {
		return strings.Repeat("_", max(len(s), 1))
	}
	return s
}
