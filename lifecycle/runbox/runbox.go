// Package runbox is the sandbox of one pipeline run, as the executor
// opens and closes it: the run's host uid (leased), its egress proxy
// (pkg/egress) on a socket only that uid may use, what the sandbox
// (pkg/sandbox) binds, hides and limits, and what the proxy refused, for
// the run's log, metrics and failure comment.
package runbox

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/egress"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Config runs every pipeline and persist command in a sandbox of its
// own (pkg/sandbox): a host uid no other run has, its own namespaces, the
// host's system directories read-only, the ticket's work dir, and no
// network but an egress proxy (pkg/egress) that lets it reach the hosts
// its project lists.
type Config struct {
	// Exe is the sandbox's init binary, one every uid may run
	// (sandbox.ReachableExe of the daemon's own).
	Exe string
	// UIDs is where a root daemon leases each run's host uid from; a
	// daemon that is not root runs every sandbox as its own uid.
	UIDs sandbox.Range
	// Limits, Allow and Mounts are the daemon's: every project's runs
	// start from them (limits under the project's and the stage's).
	Limits lifecycle.RunLimits
	Allow  []lifecycle.AllowRule
	Mounts []lifecycle.Mount
	// Private are the daemon's directories no bind may hold: the work
	// root (every ticket's tree), the git root, the logs. A pipeline
	// directory or mount that holds one is refused.
	Private []string
	// Hide are the daemon's files no run may see, even where they lie
	// below a directory the sandbox shows (the config beside the
	// pipelines, token files under /etc).
	Hide []string
	// Listeners are the daemon's own listeners and its Redis, which no
	// rule may open, not even one naming their IP: an unspecified address
	// stands for every address of this host on that port. The proxy
	// refuses loopback and private addresses anyway; these hold against a
	// rule that lists such an IP (a tracker on 127.0.0.1 in the demo).
	// Read at each dial: listeners bound to port 0 have theirs by then.
	Listeners func() []netip.AddrPort
	// Intercept lets the egress proxy read https requests to the hosts
	// that need it (methods, injected secrets) with a CA of the run's
	// own, which the run trusts; false: those are http only.
	Intercept bool
	// Controllers says which limits the host's run cgroups hold; a run
	// gets only those (the daemon names the others once at start).
	Controllers Controllers
	// SocketDir holds the runs' proxy sockets ("": the system temp dir).
	SocketDir string
	// Refused and LimitKilled count what the metrics show; nil: nothing.
	Refused     func(project, reason string)
	LimitKilled func(project, limit string)
	// Resolver and UpstreamRoots are the egress proxy's (tests).
	Resolver      egress.Resolver
	UpstreamRoots *x509.CertPool
}

// Controllers are the limits a host can enforce.
type Controllers struct{ Memory, Processes, CPU bool }

// nprocSlack is what RLIMIT_NPROC adds to a run's process limit for the
// sandbox's init, whose threads the kernel counts under the run's uid.
const nprocSlack = 32

// maxRefusalNotes bounds the refused hosts a failure comment names.
const maxRefusalNotes = 5

// Box is one run's sandbox: its uid, its egress proxy, what the proxy
// refused.
type Box struct {
	spec    sandbox.Spec
	env     []string
	limits  runcg.Limits
	lease   *sandbox.Lease
	proxy   *egress.Proxy
	dir     string
	served  chan struct{}
	project string
	cfg     *Config
	log     *zap.Logger

	closeOnce sync.Once

	mu       sync.Mutex
	out      io.Writer // the run log, once the run's output is open
	refusals []egress.Refusal
	seen     map[string]bool
}

// Open makes the sandbox of one run of p's stage in workDir, whose
// command is argv with env: it leases the run's uid and has handTree give
// it the work dir (workRoot down to workDir), starts the run's egress
// proxy, and says what the sandbox binds, hides and limits. nil without
// a config.
func Open(cfg *Config, p *lifecycle.Project, stage string, ref platforms.Ref, workDir string, argv, env []string,
	handTree func(uid, gid uint32) error, log *zap.Logger) (*Box, error) {
	if cfg == nil {
		return nil, nil
	}
	b := &Box{project: p.Name, cfg: cfg, log: log, served: make(chan struct{}), seen: map[string]bool{}}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if os.Geteuid() == 0 {
		l, err := sandbox.LeaseUID(cfg.UIDs, ref.String())
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		b.lease, uid, gid = l, l.UID(), l.UID()
		// The tree an earlier run left under another uid becomes this
		// one's, never through a link it planted.
		if err := handTree(uid, gid); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	sock, err := b.startProxy(p, uid)
	if err != nil {
		return nil, err
	}
	ro, rw := sandbox.DefaultReadOnly(), []string(nil)
	for _, m := range slices.Concat(cfg.Mounts, p.Pipeline.Sandbox.Mounts) {
		if err := cfg.private(m.Path); err != nil {
			return nil, err
		}
		if m.Writable {
			rw = append(rw, m.Path)
		} else {
			ro = append(ro, m.Path)
		}
	}
	// The pipeline's own directory, when it lies outside what is shown
	// already: its scripts may call their neighbours.
	if path, err := procrun.LookPath(argv[0], env); err == nil && filepath.IsAbs(path) {
		if dir := filepath.Dir(path); !under(dir, ro) && !under(dir, []string{workDir}) {
			if err := cfg.private(dir); err != nil {
				return nil, err
			}
			ro = append(ro, dir)
		}
	}
	b.spec = sandbox.Spec{HostUID: uid, HostGID: gid, WorkDir: workDir, ReadOnly: ro, Writable: rw, Hide: cfg.Hide, Proxy: sock}
	b.env = append(proxyEnv(b.spec, slices.Concat(cfg.Allow, p.Pipeline.Sandbox.Allow)), "HOME=/tmp", "TMPDIR=/tmp", "USER=agentsmith")
	if b.proxy.CA != nil {
		b.trustCA(b.proxy.CA)
	}
	limits := p.StageLimits(stage).Over(cfg.Limits)
	b.limits = cfg.Controllers.hold(limits)
	// Second walls that need no cgroup: the run's uid may hold this many
	// processes (its init's threads count too, hence the slack), and
	// its memory-backed /tmp and /dev/shm no more than its memory.
	if limits.Processes > 0 {
		b.spec.Nproc = uint64(limits.Processes) + nprocSlack
	}
	if limits.MemoryBytes > 0 {
		b.spec.TmpSize = limits.MemoryBytes
	}
	ok = true
	return b, nil
}

// startProxy serves the run's egress proxy on a unix socket only the
// run's uid may use, which the sandbox binds inside.
func (b *Box) startProxy(p *lifecycle.Project, uid uint32) (string, error) {
	cfg := b.cfg
	dir, err := os.MkdirTemp(cfg.SocketDir, "agentsmith-egress-")
	if err != nil {
		return "", fmt.Errorf("sandbox: egress socket dir: %w", err)
	}
	b.dir = dir
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", fmt.Errorf("sandbox: egress socket dir: %w", err)
	}
	sock := filepath.Join(dir, "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return "", fmt.Errorf("sandbox: egress socket: %w", err)
	}
	if os.Geteuid() == 0 {
		err = os.Chown(sock, int(uid), int(uid))
	}
	if err == nil {
		err = os.Chmod(sock, 0o600)
	}
	if err != nil {
		_ = ln.Close()
		return "", fmt.Errorf("sandbox: egress socket: %w", err)
	}
	pol := egress.Policy{}
	for _, r := range slices.Concat(cfg.Allow, p.Pipeline.Sandbox.Allow) {
		pol.Allow = append(pol.Allow, egress.Rule{Host: r.Host, Ports: r.Ports, Methods: r.Methods})
	}
	for _, in := range p.Pipeline.Sandbox.Inject {
		pol.Inject = append(pol.Inject, egress.Inject{Host: in.Host, Header: in.Header, Placeholder: in.Placeholder, Value: in.Value})
	}
	b.proxy = &egress.Proxy{Policy: pol, OnRefuse: b.refused, Resolver: cfg.Resolver, UpstreamRoots: cfg.UpstreamRoots, Dial: b.dial}
	if cfg.Intercept && needsInterception(slices.Concat(cfg.Allow, p.Pipeline.Sandbox.Allow), p.Pipeline.Sandbox.Inject) {
		// One CA per run: its key dies with the run, and no run trusts
		// another's.
		if b.proxy.CA, err = egress.NewCA(); err != nil {
			_ = ln.Close()
			b.proxy = nil // never served: Close must not wait for it
			return "", fmt.Errorf("sandbox: egress CA: %w", err)
		}
	}
	go func() {
		defer close(b.served)
		if err := b.proxy.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			b.log.Warn("egress proxy stopped", zap.Error(err))
		}
	}()
	return sock, nil
}

// dial connects the proxy to an address it checked, never to one of the
// daemon's own listeners or its Redis.
func (b *Box) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err == nil && b.ownListener(ap) {
		host, port := ap.Addr().String(), int(ap.Port())
		b.refused(egress.Refusal{Host: host, Port: port, Method: "CONNECT", Addr: addr, Reason: "the daemon's own listener or Redis, which no rule opens"})
		return nil, fmt.Errorf("%s is the daemon's own listener or Redis", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// ownListener reports whether ap is one of the daemon's listeners.
func (b *Box) ownListener(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	if b.cfg.Listeners == nil {
		return false
	}
	for _, l := range b.cfg.Listeners() {
		if l.Port() != ap.Port() {
			continue
		}
		if l.Addr().Unmap() == a || l.Addr().IsUnspecified() && isLocal(a) {
			return true
		}
	}
	return false
}

// isLocal reports whether a is an address of this host.
func isLocal(a netip.Addr) bool {
	if a.IsLoopback() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, x := range addrs {
		if n, ok := x.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// caBundle is where the system's roots are read for a sandbox that trusts
// the egress proxy's CA as well.
var caBundle = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}

// trustCA puts the proxy's CA in the sandbox, alone and in a bundle with
// the system's roots, and points the usual variables at them.
func (b *Box) trustCA(ca *egress.CA) {
	pem := ca.CertPEM()
	bundle := []byte{}
	for _, f := range caBundle {
		if sys, err := os.ReadFile(f); err == nil {
			bundle = append(sys, '\n')
			break
		}
	}
	bundle = append(bundle, pem...)
	caFile, bundleFile := sandbox.RunDir+"/ca.pem", sandbox.RunDir+"/ca-bundle.pem"
	b.spec.Files = map[string][]byte{caFile: pem, bundleFile: bundle}
	b.env = append(b.env, "SSL_CERT_FILE="+bundleFile, "CURL_CA_BUNDLE="+bundleFile, "GIT_SSL_CAINFO="+bundleFile,
		"REQUESTS_CA_BUNDLE="+bundleFile, "NODE_EXTRA_CA_CERTS="+caFile)
}

// proxyEnv points the run's clients at its proxy. NO_PROXY keeps loopback
// inside the sandbox (a test server the pipeline starts), except a
// loopback IP a rule allows: that one is the host's, reached through
// the proxy.
func proxyEnv(s sandbox.Spec, allow []lifecycle.AllowRule) []string {
	env := s.ProxyEnv()
	var keep []string
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		if !slices.ContainsFunc(allow, func(r lifecycle.AllowRule) bool { return r.Host == h }) {
			keep = append(keep, h)
		}
	}
	noProxy := strings.Join(keep, ",")
	for i, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "NO_PROXY" || k == "no_proxy" {
			env[i] = k + "=" + noProxy
		}
	}
	return env
}

// needsInterception reports whether a run's proxy reads https requests:
// a rule with methods, or a secret it injects.
func needsInterception(allow []lifecycle.AllowRule, inject []lifecycle.Injection) bool {
	return len(inject) > 0 || slices.ContainsFunc(allow, func(r lifecycle.AllowRule) bool { return len(r.Methods) > 0 })
}

// Apply puts the run in its sandbox.
func (b *Box) Apply(spec *procrun.Spec) {
	if b == nil {
		return
	}
	s := b.spec
	spec.Sandbox, spec.SandboxExe, spec.Limits, spec.Credential = &s, b.cfg.Exe, b.limits, nil
	spec.Env = append(withoutVars(spec.Env, "HOME", "TMPDIR", "USER"), b.env...)
	if spec.Output != nil {
		w := &lockedWriter{w: spec.Output}
		spec.Output = w
		b.mu.Lock()
		b.out = w
		b.mu.Unlock()
	}
}

// refused hears the proxy refuse one connection or request: logged,
// counted, written to the run log, kept for the failure comment.
func (b *Box) refused(r egress.Refusal) {
	kind := refusalKind(r)
	if b.cfg.Refused != nil {
		b.cfg.Refused(b.project, kind)
	}
	b.log.Warn("sandbox egress refused", zap.String("refused", r.String()), zap.String("kind", kind))
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.out != nil {
		_, _ = fmt.Fprintf(b.out, "agentsmithd egress: refused %s\n", r.String())
	}
	key := fmt.Sprintf("%s:%d %s", r.Host, r.Port, kind)
	if !b.seen[key] && len(b.refusals) < maxRefusalNotes {
		b.seen[key] = true
		b.refusals = append(b.refusals, r)
	}
}

// refusalKind is a refusal's metric label: a small fixed set.
func refusalKind(r egress.Refusal) string {
	switch {
	case r.Addr != "":
		return "address"
	case strings.Contains(r.Reason, "method"):
		return "method"
	case strings.Contains(r.Reason, "intercept"):
		return "interception"
	}
	return "not_allowed"
}

// Notes name what the proxy refused, for the outcome's comment, with the
// line that would allow it; the caller escapes them for the tracker.
func (b *Box) Notes() []string {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, r := range b.refusals {
		out = append(out, "sandbox: refused "+r.String())
	}
	return out
}

// Ended counts the run's end where a limit ended it (a run that succeeded
// all the same was not ended by one).
func (b *Box) Ended(res procrun.Result) {
	if b == nil || res.LimitHit == "" || res.OK() || b.cfg.LimitKilled == nil {
		return
	}
	limit := "processes"
	if strings.HasPrefix(res.LimitHit, "memory") {
		limit = "memory"
	}
	b.cfg.LimitKilled(b.project, limit)
}

// Close stops the proxy, removes its socket and gives the uid back; the
// run's processes are gone by then (procrun killed its cgroup and the
// sandbox's PID namespace died with its init).
func (b *Box) Close() {
	if b == nil {
		return
	}
	b.closeOnce.Do(func() {
		// A handler the proxy's Close does not wait for may still refuse
		// something; the run log is finished by then.
		b.mu.Lock()
		b.out = nil
		b.mu.Unlock()
		if b.proxy != nil {
			_ = b.proxy.Close()
			<-b.served
		}
		if b.dir != "" {
			_ = os.RemoveAll(b.dir)
		}
		if b.lease != nil {
			_ = b.lease.Release()
		}
	})
}

// Owner is the run's host user, for what the daemon makes in the work dir
// before the run (the work branch); nil when runs keep the daemon's.
func (b *Box) Owner() *syscall.Credential {
	if b == nil || b.lease == nil {
		return nil
	}
	return &syscall.Credential{Uid: b.spec.HostUID, Gid: b.spec.HostGID}
}

// private refuses a bind of dir when it holds one of the daemon's own
// directories: every ticket's tree, the git dirs or the logs would be in
// each run's view.
func (c *Config) private(dir string) error {
	for _, d := range c.Private {
		if d != "" && under(d, []string{dir}) {
			return fmt.Errorf("sandbox: %s holds %s, which no run may see: move the pipeline or mount out of it", dir, d)
		}
	}
	return nil
}

// under reports whether path is one of dirs or below one.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, path); err == nil && filepath.IsLocal(rel) || path == d {
			return true
		}
	}
	return false
}

// withoutVars is env without the variables named.
func withoutVars(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, k)
	})
}

// lockedWriter lets the egress proxy write to the run log beside procrun.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// UID is the run's host uid: what owns the files the run leaves.
func (b *Box) UID() uint32 { return b.spec.HostUID }

// hold are the limits of l the host enforces; Unlimited and unset lift a
// limit.
func (c Controllers) hold(l lifecycle.RunLimits) runcg.Limits {
	var out runcg.Limits
	if c.Memory {
		out.MemoryBytes = max(l.MemoryBytes, 0)
	}
	if c.Processes {
		out.Pids = max(l.Processes, 0)
	}
	if c.CPU {
		out.CPU = max(l.CPU, 0)
	}
	return out
}
