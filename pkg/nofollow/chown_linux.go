package nofollow

import "golang.org/x/sys/unix"

// chownEntry chowns the entry name of dirfd itself (a link is not
// followed), unless it is a non-directory with other names. The check and
// the chown are on one O_PATH descriptor, so they see the same inode
// whatever the name points at in between.
func chownEntry(dirfd int, name string, uid, gid int) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		return nil
	}
	return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH)
}
