//go:build linux

package nofollow

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// resolvers runs f once with openat2 and once with the O_NOFOLLOW walk
// that stands in for it on kernels without openat2.
func resolvers(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", func(t *testing.T) {
		fd, err := unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
		if errors.Is(err, unix.ENOSYS) {
			t.Skip("this kernel has no openat2")
		}
		unix.Close(fd)
		f(t)
		if noOpenat2.Load() {
			t.Fatal("openat2 was given up on a kernel that has it")
		}
	})
	t.Run("walk", func(t *testing.T) {
		forceWalk.Store(true)
		t.Cleanup(func() { forceWalk.Store(false) })
		f(t)
	})
}

// secret is a file outside the tree that only its owner may read, with
// known content.
func secret(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func unchanged(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "root only\n" {
		t.Fatalf("%s was changed through a link: %q, %v", p, b, err)
	}
}

func TestOpenFileRefusesALinkAtTheEnd(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root, s := t.TempDir(), secret(t)
		if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(s, filepath.Join(root, "logs", "attempt-2.log")); err != nil {
			t.Fatal(err)
		}
		f, err := OpenFile(root, "logs/attempt-2.log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
		if err == nil {
			f.Close()
			t.Fatal("opened through a link")
		}
		if !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("err = %v, want ELOOP", err)
		}
		unchanged(t, s)
		if _, err := Open(root, "logs/attempt-2.log"); !errors.Is(err, syscall.ELOOP) {
			t.Fatalf("read through a link: err = %v, want ELOOP", err)
		}
	})
}

func TestOpenFileRefusesALinkOnTheWay(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root, s := t.TempDir(), secret(t)
		if err := os.Symlink(filepath.Dir(s), filepath.Join(root, "logs")); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"logs/secret", "./logs/secret", "logs/../logs/secret"} {
			f, err := OpenFile(root, name, os.O_WRONLY|os.O_TRUNC, 0)
			if err == nil {
				f.Close()
				t.Fatalf("%s: opened through a linked directory", name)
			}
		}
		unchanged(t, s)
		if err := MkdirAll(root, "logs/x", 0o750); err == nil {
			t.Fatal("MkdirAll went through a linked directory")
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(s), "x")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("directory made through a link: %v", err)
		}
	})
}

func TestOpenFileRefusesEscapes(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		for _, name := range []string{"../x", "a/../../x", "/etc/passwd"} {
			if _, err := Open(root, name); !errors.Is(err, ErrEscape) {
				t.Errorf("%s: err = %v, want ErrEscape", name, err)
			}
		}
	})
}

func TestOpenFileAndMkdirAllWorkOnPlainTrees(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root := t.TempDir()
		if err := MkdirAll(root, "p/t", 0o750); err != nil {
			t.Fatal(err)
		}
		if err := MkdirAll(root, "p/t", 0o750); err != nil {
			t.Fatalf("existing dirs: %v", err)
		}
		f, err := OpenFile(root, "p/t/attempt-1.log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("out\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		fi, err := os.Stat(filepath.Join(root, "p/t/attempt-1.log"))
		if err != nil || fi.Mode().Perm()&^0o640 != 0 {
			t.Fatalf("file: %v %v", fi, err)
		}
		r, err := Open(root, "p/t/attempt-1.log")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b := make([]byte, 10)
		if n, _ := r.Read(b); string(b[:n]) != "out\n" {
			t.Fatalf("read %q", b[:n])
		}
		if d, err := Open(root, ""); err != nil {
			t.Fatalf("root itself: %v", err)
		} else {
			d.Close()
		}
	})
}

func TestRemoveRemovesTheLinkNotItsTarget(t *testing.T) {
	t.Parallel()
	resolvers(t, func(t *testing.T) {
		root, s := t.TempDir(), secret(t)
		if err := os.Symlink(s, filepath.Join(root, "result.json")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Dir(s), filepath.Join(root, "d")); err != nil {
			t.Fatal(err)
		}
		if err := Remove(root, "d/secret"); err == nil {
			t.Fatal("removed through a linked directory")
		}
		if err := Remove(root, "result.json"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(root, "result.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("link left: %v", err)
		}
		unchanged(t, s)
		if err := Remove(root, "result.json"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("missing file: err = %v, want not exist", err)
		}
		if err := os.Mkdir(filepath.Join(root, "empty"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := Remove(root, "empty"); err != nil {
			t.Fatalf("empty dir: %v", err)
		}
	})
}
