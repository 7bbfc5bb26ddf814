// Package statustoken keeps the admin listener's token when the config
// names none: the daemon creates it once, random, in a file beside its
// config that only the daemon's user can read, and agentsmithctl reads it
// from there. The admin listener authenticates every request, loopback
// included (a pipeline runs on the same host and reaches 127.0.0.1 too), so
// the walkthrough's setup without status.token still has one; a pipeline
// running as another user (pipeline.run_as) cannot read the file.
//
// The file is opened without following symlinks and must be a regular
// file owned by the caller's effective uid with no group or other
// permission bits: the config's directory may be writable by someone else,
// who must not be able to plant a token the daemon would then accept, or
// point the daemon's write at another file.
package statustoken

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Suffix replaces the config file's extension to name the token file:
// agentsmithd.yaml → agentsmithd.status-token.
const Suffix = ".status-token"

// minLen is the shortest token accepted from the file (a created one has
// 64 hex digits).
const minLen = 32

// maxLen bounds what is read from the file.
const maxLen = 4 << 10

// Path is the token file of the config at cfgPath: in the config's
// directory, named after it, so two daemons with two configs in one
// directory have two tokens.
func Path(cfgPath string) string {
	base := filepath.Base(cfgPath)
	return filepath.Join(filepath.Dir(cfgPath), strings.TrimSuffix(base, filepath.Ext(base))+Suffix)
}

// Ensure returns the token in the file at path, creating the file with a
// fresh random token (mode 0600) when there is none. created says it did.
func Ensure(path string) (token string, created bool, err error) {
	token, err = Read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return token, false, err
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	token = hex.EncodeToString(b)
	// The token is written to a private temporary file first and then
	// linked to its name, which fails rather than replaces: another replica
	// of this config never reads a file created but not yet written.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", false, fmt.Errorf("status token: create %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.WriteString(token + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("status token: write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		// Another replica of this config created it meanwhile.
		token, err = Read(path)
		return token, false, err
	} else if err != nil {
		return "", false, fmt.Errorf("status token: create %s: %w", path, err)
	}
	return token, true, nil
}

// Read returns the token in the file at path. An error wrapping
// fs.ErrNotExist means there is no file yet.
func Read(path string) (string, error) { return read(path, false) }

// ReadAsOperator is Read for agentsmithctl: root may also read a file the
// daemon's own user owns (the mode and symlink checks still hold). The
// daemon itself uses Read, which accepts only its own file.
func ReadAsOperator(path string) (string, error) { return read(path, os.Geteuid() == 0) }

func read(path string, anyOwner bool) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return "", fmt.Errorf("status token: %s is a symlink; remove it (the daemon creates the file itself)", path)
		}
		return "", fmt.Errorf("status token: %w", err)
	}
	defer func() { _ = f.Close() }()
	if err := checkOwn(f, anyOwner); err != nil {
		return "", fmt.Errorf("status token: %s: %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxLen+1))
	if err != nil {
		return "", fmt.Errorf("status token: read %s: %w", path, err)
	}
	token := strings.TrimSpace(string(b))
	switch {
	case len(b) > maxLen:
		return "", fmt.Errorf("status token: %s is over %d bytes", path, maxLen)
	case len(token) < minLen || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }):
		return "", fmt.Errorf("status token: %s must hold one token of at least %d printable characters; remove it and the daemon creates a new one", path, minLen)
	}
	return token, nil
}

// checkOwn refuses a file that is not a regular file, that another user
// owns or that others may read or write.
func checkOwn(f *os.File, anyOwner bool) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && !anyOwner && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not by this user (uid %d)", st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mode %04o lets others read or write it; chmod 600 it", perm)
	}
	return nil
}
