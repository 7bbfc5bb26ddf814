//go:build unix && !linux

package nofollow

import "golang.org/x/sys/unix"

// chownEntry chowns the entry name of dirfd itself (a link is not
// followed), unless it is a non-directory with other names. Without O_PATH
// the check and the chown are two lookups of the name; both are relative to
// dirfd, so only a hard link made into the tree in between can slip
// through.
func chownEntry(dirfd int, name string, uid, gid int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		return nil
	}
	return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}
