package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Defaults for zero Spec fields.
const (
	DefaultUID       = 1000
	DefaultGID       = 1000
	DefaultProxyPort = 3128
	DefaultHostname  = "agentsmith-run"
)

// RunDir is the private tmpfs inside holding Spec.Files and the proxy
// socket; read-only to the pipeline.
const RunDir = "/run/agentsmith"

// ProxySocket is where Spec.Proxy is bound inside.
const ProxySocket = RunDir + "/egress.sock"

// Bounds on what a Spec carries into the init, which reads it whole.
const (
	maxFiles    = 1 << 20 // total bytes of Spec.Files
	maxSpecWire = 8 << 20 // the encoded spec, environment and argv included
)

// Spec is one run's sandbox.
type Spec struct {
	// HostUID and HostGID are the host ids the run's single inside uid and
	// gid map to: a leased id (LeaseUID) under a root daemon, the daemon's
	// own uid and gid under an unprivileged one. 0 (host root) is refused.
	HostUID, HostGID uint32
	// UID and GID are the inside ids the pipeline runs as; 0 means
	// DefaultUID/DefaultGID. Never root: tools such as Claude Code refuse
	// some flags as root, and a root pipeline would hold capabilities.
	UID, GID uint32
	// WorkDir is bound read-write at the same absolute path and is the
	// pipeline's working directory. HostUID must be able to reach it.
	WorkDir string
	// ReadOnly are host paths bound read-only (recursively, nosuid, nodev)
	// at the same path; a symlink is recreated as the same symlink.
	// DefaultReadOnly is the usual set.
	ReadOnly []string
	// Writable are extra host paths bound read-write (nosuid, nodev).
	Writable []string
	// Hide are paths masked after every bind: a directory gets an empty
	// read-only tmpfs, anything else /dev/null. Paths that do not exist
	// inside are skipped (there is nothing to hide).
	Hide []string
	// Proxy is the host path of a unix socket (the run's egress proxy),
	// bridged to 127.0.0.1:ProxyPort inside; "" means no network at all.
	Proxy string
	// ProxyPort is the inside TCP port on 127.0.0.1 (and ::1); 0 means
	// DefaultProxyPort.
	ProxyPort int
	// Hostname inside; "" means DefaultHostname.
	Hostname string
	// Nproc, when not 0, is the run's RLIMIT_NPROC: the most tasks
	// (processes and threads) its uid may have in its user namespace, the
	// init's own few threads included. The init sets it (soft and hard)
	// before it starts the pipeline, which inherits it and cannot raise
	// it. A host uid leased per run (LeaseUID) makes it a cap on the run;
	// an unprivileged daemon's runs share its uid, but each run's count is
	// its own namespace's. 0 leaves the daemon's limit.
	Nproc uint64
	// TmpSize, when not 0, is the size in bytes of the run's private /tmp
	// and, separately, of its /dev/shm (tmpfs size=, rounded up to whole
	// pages): a write beyond it fails with ENOSPC. 0 is the kernel's
	// default, half of RAM each; negative is refused.
	TmpSize int64
	// Files are small files placed under RunDir (keys are absolute paths
	// below it, e.g. "/run/agentsmith/ca.pem"), read-only to the pipeline.
	Files map[string][]byte
}

// DefaultReadOnly returns the system directories a pipeline needs to run
// programs, those of /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt
// that exist here.
func DefaultReadOnly() []string {
	var out []string
	for _, p := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"} {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ProxyEnv returns the environment that points HTTP clients at the
// bridged proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY in both cases, and
// NO_PROXY for loopback), or nil for a Spec without a proxy. The caller
// appends it to the pipeline's environment: Prepare changes no variable.
func (s Spec) ProxyEnv() []string {
	if s.Proxy == "" {
		return nil
	}
	u := "http://127.0.0.1:" + strconv.Itoa(s.port())
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+u, strings.ToLower(k)+"="+u)
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
}

func (s Spec) port() int {
	if s.ProxyPort == 0 {
		return DefaultProxyPort
	}
	return s.ProxyPort
}

// normalize fills defaults and checks s; it returns the copy the init gets.
func (s Spec) normalize() (Spec, error) {
	if s.HostUID == 0 || s.HostGID == 0 {
		return s, errors.New("sandbox: HostUID/HostGID 0 would map host root into the run: lease a uid (LeaseUID) or use the daemon's own ids")
	}
	if s.UID == 0 {
		s.UID = DefaultUID
	}
	if s.GID == 0 {
		s.GID = DefaultGID
	}
	if s.Hostname == "" {
		s.Hostname = DefaultHostname
	}
	s.ProxyPort = s.port()
	if s.ProxyPort < 1 || s.ProxyPort > 65535 {
		return s, fmt.Errorf("sandbox: proxy port %d out of range", s.ProxyPort)
	}
	if s.TmpSize < 0 {
		return s, fmt.Errorf("sandbox: tmp size %d is negative", s.TmpSize)
	}
	var err error
	clean := func(what string, p string) string {
		if err == nil && (p == "" || !filepath.IsAbs(p)) {
			err = fmt.Errorf("sandbox: %s %q is not an absolute path", what, p)
		}
		return filepath.Clean(p)
	}
	s.WorkDir = clean("work directory", s.WorkDir)
	if s.WorkDir == "/" && err == nil {
		err = errors.New("sandbox: work directory is /")
	}
	list := func(what string, ps []string) []string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			out = append(out, clean(what, p))
		}
		return out
	}
	s.ReadOnly = list("read-only path", s.ReadOnly)
	s.Writable = list("writable path", s.Writable)
	s.Hide = list("hidden path", s.Hide)
	if s.Proxy != "" {
		s.Proxy = clean("proxy socket", s.Proxy)
	}
	if err != nil {
		return s, err
	}
	total := 0
	files := make(map[string][]byte, len(s.Files))
	for p, b := range s.Files {
		c := filepath.Clean(p)
		if !strings.HasPrefix(c, RunDir+"/") || c == ProxySocket {
			return s, fmt.Errorf("sandbox: file %q is not below %s (or is the proxy socket)", p, RunDir)
		}
		total += len(b)
		files[c] = b
	}
	if total > maxFiles {
		return s, fmt.Errorf("sandbox: files hold %d bytes, more than %d", total, maxFiles)
	}
	s.Files = files
	return s, nil
}

// bind is one bind mount the init makes.
type bind struct {
	Path     string
	Writable bool
}

// binds are s's bind mounts, parents before children so that a nested
// path is mounted on top of its parent's bind.
func (s Spec) binds() []bind {
	seen := map[string]int{}
	var bs []bind
	add := func(p string, w bool) {
		if i, ok := seen[p]; ok {
			bs[i].Writable = bs[i].Writable || w
			return
		}
		seen[p] = len(bs)
		bs = append(bs, bind{Path: p, Writable: w})
	}
	for _, p := range s.ReadOnly {
		add(p, false)
	}
	for _, p := range s.Writable {
		add(p, true)
	}
	add(s.WorkDir, true)
	sort.SliceStable(bs, func(i, j int) bool {
		return strings.Count(bs[i].Path, "/") < strings.Count(bs[j].Path, "/")
	})
	return bs
}

// wire is what the init reads on fd 3.
type wire struct {
	Spec  Spec
	Path  string
	Args  []string
	Env   []string
	Extra int  // inherited files after the init's own, passed on as 3, 4, …
	Probe bool // Available's probe: set up, start nothing, report 0
}
