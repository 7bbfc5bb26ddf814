package lifecycle

import (
	"path/filepath"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// GitDir is the daemon's git dir for the ticket's work dir under root:
// <root>-git/<project>/<ticket>, beside the work root rather than in it, so
// that nothing the pipeline can write is read as git metadata
// (pkg/gitws). The daemon makes it 0700; it is kept between attempts on
// this replica, like the work dir, and made again from the remote when
// missing.
func GitDir(root string, ref platforms.Ref) string {
	return filepath.Join(GitRoot(root), ticketRel(ref))
}

// GitRoot is where the daemon keeps the git dirs of the tickets whose work
// dirs are under the work root root, laid out {project}/{ticket} as the
// work root is.
func GitRoot(root string) string { return filepath.Clean(root) + "-git" }
