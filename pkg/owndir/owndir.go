// Package owndir makes and checks the directories the daemon keeps to
// itself: the logs root and the root of its git dirs. Whoever else can
// write one can plant a link where the daemon writes a log, or a config
// the daemon's git runs (a filter driver, core.sshCommand) with the
// daemon's rights. The default work_dir is under $TMPDIR, where any local
// user can make the parent first.
package owndir

import (
	"fmt"
	"io/fs"
	"os"
)

// Ensure creates dir with perm (and its missing parents) when missing,
// then checks it as Check does.
func Ensure(dir string, perm fs.FileMode) error {
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	return Check(dir)
}

// Check refuses dir unless it is a directory owned by the daemon's
// effective uid that neither group nor others may write.
func Check(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	uid, known := owner(fi)
	if !fi.IsDir() || (known && uid != os.Geteuid()) || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s must be a directory of the daemon's user (uid %d) that no one else may write (is %v, owner uid %d)",
			dir, os.Geteuid(), fi.Mode(), uid)
	}
	return nil
}
