//go:build unix

package owndir

import (
	"io/fs"
	"syscall"
)

// owner is the uid that owns the file.
func owner(fi fs.FileInfo) (uid int, known bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), true
}
