package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The mounts are made with the new mount API (open_tree, move_mount,
// mount_setattr, fsopen/fsmount; Linux 5.12): a bind source is captured
// as a detached copy before anything is mounted, every target is resolved
// inside the new root (openat2 RESOLVE_IN_ROOT) so that a symlink in a
// bound tree cannot send a mount outside it, and mount_setattr changes
// only the flags it is given, so a read-only bind keeps the nosuid, nodev
// and noexec flags that are locked on a mount inherited into a user
// namespace (a classic MS_REMOUNT|MS_RDONLY would have to repeat them or
// fail with EPERM) and applies to every submount, not only the top one.

// source is a bind source captured before the new root is mounted.
type source struct {
	bind
	fd   int    // detached copy of the source tree; -1 for a symlink
	link string // a symlink's target, recreated as is
	dir  bool
}

// step is a setup failure: which step and why.
type step struct {
	what string
	err  error
}

func (e *step) Error() string { return "sandbox: " + e.what + ": " + e.err.Error() }

func fail(what string, err error) error { return &step{what, err} }

// capture clones the mount tree at p (recursively: a bind of a tree with
// mounts below it that are locked to it must take them along).
func capture(p string) (int, error) {
	return unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
}

// newFS makes a detached mount of a new file system.
func newFS(fstype string, attrs uint64, opts ...string) (int, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fs)
	for _, o := range opts {
		k, v, ok := strings.Cut(o, "=")
		if ok {
			err = unix.FsconfigSetString(fs, k, v)
		} else {
			err = unix.FsconfigSetFlag(fs, k)
		}
		if err != nil {
			return -1, fmt.Errorf("%s option %s: %w", fstype, o, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, err
	}
	return unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, int(attrs))
}

// setattr sets flags on the mount (tree) fd refers to.
func setattr(fd int, recursive bool, set uint64) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	return unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: set})
}

// attach mounts the detached mount m on the object target refers to.
func attach(m, target int) error {
	return unix.MoveMount(m, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// openIn opens p (absolute, as seen inside) as an O_PATH fd, resolving
// every component, symlinks included, inside root.
func openIn(root int, p string) (int, error) {
	rel := strings.TrimPrefix(filepath.Clean(p), "/")
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
}

// makeIn opens p inside root, creating it and its missing parents
// (directories; p itself a directory when dir, else an empty file).
func makeIn(root int, p string, dir bool) (int, error) {
	fd, err := openIn(root, p)
	if !errors.Is(err, unix.ENOENT) || p == "/" {
		return fd, err
	}
	parent, err := makeIn(root, filepath.Dir(p), true)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	name := filepath.Base(p)
	if dir {
		err = unix.Mkdirat(parent, name, 0o755)
	} else {
		var f int
		f, err = unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
		if err == nil {
			_ = unix.Close(f)
		}
	}
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	return openIn(root, p)
}

// devices are bound from the host's /dev into the minimal one inside.
// Not tty: it is whatever the opener's controlling terminal is, and the
// pipeline, in a session of its own, has none (a terminal it must not
// reach would be the daemon's).
var devices = []string{"null", "zero", "full", "random", "urandom"}

// buildRoot makes the run's root and pivots into it. It runs in the init,
// in the new mount namespace, before anything of the pipeline's exists.
func buildRoot(s Spec) error {
	// Capture every source first: the root tmpfs below is mounted over
	// /tmp, where the sources (a test's work directory, a proxy socket)
	// may live.
	var srcs []source
	defer func() {
		for _, s := range srcs {
			if s.fd >= 0 {
				_ = unix.Close(s.fd)
			}
		}
	}()
	for _, b := range s.binds() {
		var st unix.Stat_t
		if err := unix.Lstat(b.Path, &st); err != nil {
			if !b.Writable && errors.Is(err, unix.ENOENT) {
				continue // a read-only system path this host lacks
			}
			return fail("bind "+b.Path, err)
		}
		src := source{bind: b, fd: -1, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if b.Writable {
				return fail("bind "+b.Path, errors.New("a writable path is a symlink"))
			}
			link, err := os.Readlink(b.Path)
			if err != nil {
				return fail("bind "+b.Path, err)
			}
			src.link = link
		} else {
			fd, err := capture(b.Path)
			if err != nil {
				return fail("bind "+b.Path, err)
			}
			src.fd = fd
		}
		srcs = append(srcs, src)
	}
	devs := map[string]int{}
	defer func() {
		for _, fd := range devs {
			_ = unix.Close(fd)
		}
	}()
	for _, d := range devices {
		if fd, err := capture("/dev/" + d); err == nil {
			devs[d] = fd
		} else if d == "null" {
			return fail("bind /dev/null", err)
		}
	}
	proxy := -1
	if s.Proxy != "" {
		var st unix.Stat_t
		if err := unix.Stat(s.Proxy, &st); err != nil {
			return fail("proxy socket", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return fail("proxy socket", fmt.Errorf("%s is not a socket", s.Proxy))
		}
		fd, err := capture(s.Proxy)
		if err != nil {
			return fail("proxy socket", err)
		}
		proxy = fd
		defer unix.Close(proxy)
	}

	// Nothing mounted from here on may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("make / private", err)
	}
	root, err := newFS("tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, "mode=0755")
	if err != nil {
		return fail("root tmpfs", err)
	}
	defer unix.Close(root)
	over := "/tmp"
	if _, err := os.Stat(over); err != nil {
		over = "/mnt"
	}
	if err := unix.MoveMount(root, "", unix.AT_FDCWD, over, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fail("mount root tmpfs on "+over, err)
	}

	if err := mountNew(root, "/proc", "proc", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
		return fail("mount proc", err)
	}
	if err := makeDev(root, devs, tmpOpts(s)); err != nil {
		return err
	}
	if err := mountNew(root, "/tmp", "tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, tmpOpts(s)...); err != nil {
		return fail("mount /tmp", err)
	}
	// The binds go on top of the private /tmp: a work tree may live
	// below /tmp on the host.
	for _, src := range srcs {
		if err := bindIn(root, src); err != nil {
			return fail("bind "+src.Path, err)
		}
	}
	if err := makeRun(root, s, proxy); err != nil {
		return err
	}
	hide := append([]string(nil), s.Hide...)
	sort.Strings(hide)
	for _, p := range hide {
		if err := mask(root, p); err != nil {
			return fail("hide "+p, err)
		}
	}

	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// it leaves only the new root (runc's way, no put_old directory).
	if err := unix.Fchdir(root); err != nil {
		return fail("chdir new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fail("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fail("detach old root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fail("chdir /", err)
	}
	// The root tmpfs belongs to the init's uid, which the pipeline shares:
	// read-only, it cannot add files at the top or change the mountpoints.
	if err := setattr(root, false, unix.MOUNT_ATTR_RDONLY); err != nil {
		return fail("read-only root", err)
	}
	return nil
}

// tmpOpts are the options of the run's private /tmp and /dev/shm.
func tmpOpts(s Spec) []string {
	opts := []string{"mode=1777"}
	if s.TmpSize > 0 {
		opts = append(opts, "size="+strconv.FormatInt(s.TmpSize, 10))
	}
	return opts
}

// bindIn attaches src inside root at its own path.
func bindIn(root int, src source) error {
	if src.link != "" {
		parent, err := makeIn(root, filepath.Dir(src.Path), true)
		if err != nil {
			return err
		}
		defer unix.Close(parent)
		err = unix.Symlinkat(src.link, parent, filepath.Base(src.Path))
		if errors.Is(err, unix.EEXIST) {
			return nil
		}
		return err
	}
	set := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if !src.Writable {
		set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := setattr(src.fd, true, set); err != nil {
		return fmt.Errorf("set flags: %w", err)
	}
	target, err := makeIn(root, src.Path, src.dir)
	if err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	}
	defer unix.Close(target)
	return attach(src.fd, target)
}

// mountNew mounts a new file system at p inside root and returns nothing
// of it; makeDev and makeRun keep theirs.
func mountNew(root int, p, fstype string, attrs uint64, opts ...string) error {
	fd, err := mountNewFD(root, p, fstype, attrs, opts...)
	if err == nil {
		_ = unix.Close(fd)
	}
	return err
}

func mountNewFD(root int, p, fstype string, attrs uint64, opts ...string) (int, error) {
	m, err := newFS(fstype, attrs, opts...)
	if err != nil {
		return -1, err
	}
	target, err := makeIn(root, p, true)
	if err != nil {
		_ = unix.Close(m)
		return -1, fmt.Errorf("mountpoint: %w", err)
	}
	defer unix.Close(target)
	if err := attach(m, target); err != nil {
		_ = unix.Close(m)
		return -1, err
	}
	return m, nil
}

// makeDev builds the minimal /dev: the host's harmless devices bound in,
// a private /dev/shm (a tmpfs with shmOpts) and /dev/pts, and the usual
// symlinks; then makes the tmpfs itself read-only.
func makeDev(root int, devs map[string]int, shmOpts []string) error {
	dev, err := mountNewFD(root, "/dev", "tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, "mode=0755")
	if err != nil {
		return fail("mount /dev", err)
	}
	defer unix.Close(dev)
	for _, d := range devices {
		fd, ok := devs[d]
		if !ok {
			continue
		}
		if err := setattr(fd, true, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return fail("bind /dev/"+d, err)
		}
		target, err := makeIn(root, "/dev/"+d, false)
		if err != nil {
			return fail("bind /dev/"+d, err)
		}
		err = attach(fd, target)
		_ = unix.Close(target)
		if err != nil {
			return fail("bind /dev/"+d, err)
		}
	}
	if err := mountNew(root, "/dev/shm", "tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, shmOpts...); err != nil {
		return fail("mount /dev/shm", err)
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2"}
	// A devpts of its own (a new instance, as always in a user namespace)
	// gives the pipeline ptys without the host's; without it there are
	// none.
	if err := mountNew(root, "/dev/pts", "devpts", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, "newinstance", "ptmxmode=0666", "mode=0620"); err == nil {
		links["ptmx"] = "pts/ptmx"
	}
	for name, to := range links {
		if err := unix.Symlinkat(to, dev, name); err != nil {
			return fail("symlink /dev/"+name, err)
		}
	}
	if err := setattr(dev, false, unix.MOUNT_ATTR_RDONLY); err != nil {
		return fail("read-only /dev", err)
	}
	return nil
}

// makeRun mounts RunDir, writes s.Files into it, binds the proxy socket
// and makes it read-only.
func makeRun(root int, s Spec, proxy int) error {
	run, err := mountNewFD(root, RunDir, "tmpfs", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, "mode=0755")
	if err != nil {
		return fail("mount "+RunDir, err)
	}
	defer unix.Close(run)
	names := make([]string, 0, len(s.Files))
	for p := range s.Files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		if err := writeIn(run, strings.TrimPrefix(p, RunDir+"/"), s.Files[p]); err != nil {
			return fail("file "+p, err)
		}
	}
	if proxy >= 0 {
		if err := setattr(proxy, false, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return fail("bind proxy socket", err)
		}
		target, err := makeIn(run, "/egress.sock", false)
		if err != nil {
			return fail("bind proxy socket", err)
		}
		err = attach(proxy, target)
		_ = unix.Close(target)
		if err != nil {
			return fail("bind proxy socket", err)
		}
	}
	if err := setattr(run, false, unix.MOUNT_ATTR_RDONLY); err != nil {
		return fail("read-only "+RunDir, err)
	}
	return nil
}

// writeIn writes a 0444 file at rel below dir, creating parents.
func writeIn(dir int, rel string, b []byte) error {
	parent, err := makeIn(dir, "/"+filepath.Dir(rel), true)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	fd, err := unix.Openat(parent, filepath.Base(rel), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mask hides p inside root: a directory under an empty read-only tmpfs,
// anything else under /dev/null. A p that does not exist is left alone.
func mask(root int, p string) error {
	target, err := openIn(root, p)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(target)
	var st unix.Stat_t
	if err := unix.Fstat(target, &st); err != nil {
		return err
	}
	var m int
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		m, err = newFS("tmpfs", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, "mode=0555", "size=4k")
	} else {
		if m, err = capture("/dev/null"); err == nil {
			err = setattr(m, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
		}
	}
	if err != nil {
		return err
	}
	defer unix.Close(m)
	return attach(m, target)
}
