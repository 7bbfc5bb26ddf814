//go:build linux

package nofollow

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// otherUID owns the files a test makes another user's; the tests that
// need it chown, which takes root (needRoot).
const otherUID = 4242

// refused fails t unless OpenRegular refuses root/name with a reason
// holding want, within a bounded time (a FIFO must not hang it).
func refused(t *testing.T, root, name string, owner int, want string) {
	t.Helper()
	type res struct {
		f   *os.File
		err error
	}
	ch := make(chan res, 1)
	go func() { f, err := OpenRegular(root, name, owner); ch <- res{f, err} }()
	var r res
	select {
	case r = <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("OpenRegular(%s) hangs", name)
	}
	if r.err == nil {
		b, _ := io.ReadAll(io.LimitReader(r.f, 100))
		r.f.Close()
		t.Fatalf("OpenRegular(%s) opened it; it reads %q", name, b)
	}
	if !errors.Is(r.err, ErrRefused) {
		t.Fatalf("OpenRegular(%s): err = %v, want ErrRefused", name, r.err)
	}
	if !strings.Contains(r.err.Error(), want) {
		t.Fatalf("OpenRegular(%s): err = %q, want it to say %q", name, r.err, want)
	}
}

func TestOpenRegularReadsAFileOfTheRunsUser(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "progress.log"), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, owner := range []int{os.Geteuid(), -1} {
			f, err := OpenRegular(root, "progress.log", owner)
			if err != nil {
				t.Fatalf("owner %d: %v", owner, err)
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil || string(b) != "one\n" {
				t.Fatalf("owner %d: read %q, %v", owner, b, err)
			}
		}
		if _, err := OpenRegular(root, "missing", -1); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRefused) {
			t.Fatalf("missing file: err = %v, want ErrNotExist", err)
		}
	})
}

// TestOpenRegularRefusesAHardLink: a hard link in the tree to a file only
// root may read, owned by another uid (as /etc/shadow is), is refused for
// its second link, whoever the expected owner is.
func TestOpenRegularRefusesAHardLink(t *testing.T) {
	t.Parallel()
	needRoot(t)
	resolvers(t, func(t *testing.T) {
		root, s := t.TempDir(), secret(t)
		if err := os.Chown(s, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(s, filepath.Join(root, "result.json")); err != nil {
			t.Fatal(err)
		}
		refused(t, root, "result.json", otherUID, "hard link (2 links)")
		refused(t, root, "result.json", -1, "hard link (2 links)")
	})
}

func TestOpenRegularRefusesAFileOfAnotherUser(t *testing.T) {
	t.Parallel()
	needRoot(t)
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		p := filepath.Join(root, "result.json")
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
		refused(t, root, "result.json", os.Geteuid(), "owned by uid 4242")
	})
}

func TestOpenRegularRefusesASymlink(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root, s := t.TempDir(), secret(t)
		if err := os.Symlink(s, filepath.Join(root, "result.json")); err != nil {
			t.Fatal(err)
		}
		refused(t, root, "result.json", -1, "symbolic link")
		// A link on the way: ELOOP from openat2, ENOTDIR from the walk.
		if err := os.Symlink(filepath.Dir(s), filepath.Join(root, "dir")); err != nil {
			t.Fatal(err)
		}
		if f, err := OpenRegular(root, "dir/secret", -1); err == nil {
			f.Close()
			t.Fatal("opened through a linked directory")
		}
	})
}

// TestOpenRegularRefusesAFIFO: a FIFO no one writes would block a plain
// open for reading forever; it is opened non-blocking and refused.
func TestOpenRegularRefusesAFIFO(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(root, "progress.log"), 0o644); err != nil {
			t.Fatal(err)
		}
		refused(t, root, "progress.log", -1, "not a regular file (a FIFO)")
	})
}

func TestOpenRegularRefusesADirectory(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		if err := os.Mkdir(filepath.Join(root, "result.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		refused(t, root, "result.json", -1, "not a regular file (a directory)")
	})
}
