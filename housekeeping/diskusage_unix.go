//go:build unix

package housekeeping

import (
	"io/fs"
	"syscall"
)

// diskUsage is the bytes the file's blocks take on disk (st_blocks, in
// 512-byte units on every unix), not its apparent size: a sparse file of
// any length costs what it stores. shared is true, with the inode's
// identity, when the file has more than one name, so that it is counted
// once.
func diskUsage(info fs.FileInfo) (bytes int64, id inode, shared bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return info.Size(), inode{}, false
	}
	return int64(st.Blocks) * 512, inode{dev: uint64(st.Dev), ino: uint64(st.Ino)}, st.Nlink > 1
}
