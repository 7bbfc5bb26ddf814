package config

import (
	"fmt"
	"math"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Sandbox modes (sandbox.mode).
const (
	// SandboxOn runs every pipeline in a sandbox of its own (pkg/sandbox):
	// its own uid and namespaces, no network but the egress proxy. serve
	// refuses to run pipelines where the kernel cannot give one.
	SandboxOn = "on"
	// SandboxOff runs pipelines as processes of the daemon's host, with
	// the daemon's network: chosen explicitly, never a fallback.
	SandboxOff = "off"
)

// Sandbox defaults: what a run may use unless the config says otherwise.
// 4 GiB and 1,024 processes hold a coding agent with a language server
// and a test run; two cores keep one run from taking a 2-core host.
const (
	DefaultSandboxMemory    = "4GiB"
	DefaultSandboxProcesses = 1024
	DefaultSandboxCPU       = 2.0
	// DefaultUIDFirst is the first host uid the sandbox leases to runs
	// when the daemon is root: 0x70000000, above systemd's container
	// ranges (524288–1879048191) and below its foreign range, assigned by
	// nothing in systemd's UID/GID documentation.
	DefaultUIDFirst = 1879048192
	DefaultUIDCount = 65536
)

// Sandbox is the daemon's sandbox (top-level `sandbox:`): whether runs are
// shut in, the host uids they get, and the mounts, limits and network
// every project's runs start from.
type Sandbox struct {
	// Mode is "on" (default) or "off".
	Mode string `yaml:"mode"`
	// UIDRange is where a root daemon leases each concurrent run's host
	// uid (and gid) from.
	UIDRange UIDRange `yaml:"uid_range"`
	// Mounts are host paths every run sees, read-only unless writable
	// (toolchains under /srv, a shared cache).
	Mounts []Mount `yaml:"mounts"`
	// Limits bound each run; a project or stage may set its own.
	Limits Limits `yaml:"limits"`
	// Network is what every run may reach through the egress proxy; a
	// project's list adds to it.
	Network Network `yaml:"network"`
}

// UIDRange is a block of host ids.
type UIDRange struct {
	First int64 `yaml:"first"`
	Count int64 `yaml:"count"`
}

// Mount is one host path bound into every run at the same path.
type Mount struct {
	Path     string `yaml:"path"`
	Writable bool   `yaml:"writable"`
}

// Limits bound one run: memory ("4GiB", "512MiB"), processes and CPU
// cores. Unset fields take the level above's (stage → project → daemon →
// defaults); memory "unlimited" and -1 processes or cpu lift a limit.
type Limits struct {
	Memory    string  `yaml:"memory"`
	Processes int64   `yaml:"processes"`
	CPU       float64 `yaml:"cpu"`
}

// Network is a sandbox's way out: the hosts the egress proxy lets a run
// reach.
type Network struct {
	Allow []AllowRule `yaml:"allow"`
}

// AllowRule lets a run reach one host: an exact name, a "*." wildcard (any
// subdomain, not the bare name) or an IP (the only way to reach a loopback,
// link-local or private address), on Ports (default 80 and 443), with
// Methods (default any; with methods set, https is intercepted so the
// proxy can read them). Short form: "host" or "host:port".
type AllowRule struct {
	Host    string   `yaml:"host"`
	Ports   []int    `yaml:"ports"`
	Methods []string `yaml:"methods"`
}

func (r *AllowRule) fromScalar(s string) string {
	host, port := s, ""
	if strings.HasPrefix(s, "[") { // [::1]:8080
		if i := strings.Index(s, "]"); i > 0 {
			host, port = s[1:i], strings.TrimPrefix(s[i+1:], ":")
		}
	} else if i := strings.LastIndex(s, ":"); i >= 0 && strings.Count(s, ":") == 1 {
		host, port = s[:i], s[i+1:]
	}
	r.Host = host
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Sprintf("%q: expected host or host:port", truncate(s, 80))
		}
		r.Ports = []int{n}
	}
	return ""
}

// PipelineSandbox is a project's (pipeline.sandbox) or a stage's
// (stages[].sandbox) part of the sandbox: its limits, the hosts it adds,
// the paths it adds.
type PipelineSandbox struct {
	Limits  Limits  `yaml:"limits"`
	Network Network `yaml:"network"`
	Mounts  []Mount `yaml:"mounts"`
}

// SecretInject hands a pipeline secret to the egress proxy instead of the
// pipeline: the pipeline's variable holds a placeholder, which the proxy
// replaces by the secret in the Header of the pipeline's requests to Host
// (the pipeline's tools format the header as they would with the secret:
// "token …", "Bearer …").
type SecretInject struct {
	Host   string `yaml:"host"`
	Header string `yaml:"header"`
}

// InjectPlaceholder is what a pipeline sees in the variable of a secret
// the proxy injects.
func InjectPlaceholder(name string) string { return "agentsmith-placeholder-" + name }

// On reports whether runs are sandboxed.
func (s Sandbox) On() bool { return s.Mode != SandboxOff }

func (s *Sandbox) applyDefaults() {
	setDefault(&s.Mode, SandboxOn)
	setDefault(&s.UIDRange.First, DefaultUIDFirst)
	setDefault(&s.UIDRange.Count, DefaultUIDCount)
	setDefault(&s.Limits.Memory, DefaultSandboxMemory)
	setDefault(&s.Limits.Processes, DefaultSandboxProcesses)
	setDefault(&s.Limits.CPU, DefaultSandboxCPU)
}

// Over returns l with every unset field taken from base.
func (l Limits) Over(base Limits) Limits {
	if l.Memory == "" {
		l.Memory = base.Memory
	}
	if l.Processes == 0 {
		l.Processes = base.Processes
	}
	if l.CPU == 0 {
		l.CPU = base.CPU
	}
	return l
}

// MemoryBytes is Memory in bytes (0: unlimited); validation refused what
// does not parse.
func (l Limits) MemoryBytes() int64 {
	n, _ := ParseBytes(l.Memory)
	return n
}

// ParseBytes reads a size: a number of bytes, or one with a binary unit
// (KiB, MiB, GiB, TiB) or a decimal one (KB, MB, GB, TB).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		n      float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(v), u.n
			break
		}
	}
	if t == "unlimited" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: expected a size such as 4GiB or 512MiB", truncate(s, 40))
	}
	return int64(f * mult), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// validateSandbox checks the daemon's sandbox block.
func (c *Config) validateSandbox(errs *Errors) {
	s := &c.Sandbox
	if s.Mode != SandboxOn && s.Mode != SandboxOff {
		errs.add("sandbox.mode", fmt.Sprintf("%q: want %q or %q", truncate(s.Mode, 20), SandboxOn, SandboxOff))
	}
	if s.UIDRange.Count < 1 || s.UIDRange.First+s.UIDRange.Count > math.MaxUint32 || s.UIDRange.First < 65536 {
		errs.add("sandbox.uid_range", "want first ≥ 65536 (above the host's accounts and nobody) and first+count below 2^32 (default first 1879048192, count 65536)")
	}
	validateLimits(errs, "sandbox.limits", s.Limits)
	validateMounts(errs, "sandbox.mounts", s.Mounts)
	validateAllow(errs, "sandbox.network.allow", s.Network.Allow)
	if s.On() {
		// Runs would see each other's trees read-only through a system
		// mount: the work root must be a place the sandbox does not bind.
		for _, ro := range append(SandboxSystemDirs(), mountPaths(s.Mounts)...) {
			if within(c.Consumer.WorkDir, ro) {
				errs.add("consumer.work_dir", fmt.Sprintf("%s lies under %s, which every sandboxed run sees: runs would read each other's work dirs; move it (default %s)", c.Consumer.WorkDir, ro, "/var/lib/agentsmithd/work"))
				break
			}
		}
		return
	}
	// Without a sandbox a pipeline reaches Redis as the daemon does.
	if !c.Redis.Password.IsSet() && c.Redis.Username == "" && !c.Redis.TLS.Enabled {
		errs.add("sandbox.mode", "off lets every pipeline reach Redis; a Redis without a password would then take any command a pipeline sends (approve, forge outcomes, FLUSHALL): set redis.password_env or password_file (and requirepass in Redis), or turn the sandbox on")
	}
}

// SandboxSystemDirs are the host directories every sandboxed run sees
// read-only (pkg/sandbox.DefaultReadOnly), named here so that validation
// can tell a work root the runs would share.
func SandboxSystemDirs() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}
}

func mountPaths(ms []Mount) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Path)
	}
	return out
}

func validateLimits(errs *Errors, path string, l Limits) {
	if l.Memory != "" {
		if n, err := ParseBytes(l.Memory); err != nil {
			errs.add(path+".memory", err.Error())
		} else if n < 16<<20 && strings.TrimSpace(l.Memory) != "unlimited" {
			errs.add(path+".memory", `below 16MiB no pipeline starts ("unlimited" lifts the limit)`)
		}
	}
	if l.Processes < -1 || l.Processes > 0 && l.Processes < 8 {
		errs.add(path+".processes", "want 8 or more (-1: unlimited)")
	}
	if l.CPU < 0 && l.CPU != -1 || l.CPU > 0 && l.CPU < 0.01 || math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0) {
		errs.add(path+".cpu", "want cores such as 0.5 or 2 (-1: unlimited)")
	}
}

func validateMounts(errs *Errors, path string, ms []Mount) {
	for i, m := range ms {
		p := fmt.Sprintf("%s[%d].path", path, i)
		switch {
		case !filepath.IsAbs(m.Path) || filepath.Clean(m.Path) != m.Path:
			errs.add(p, "want an absolute, clean path such as /opt/toolchains")
		case m.Path == "/" || slices.Contains([]string{"/proc", "/dev", "/sys", "/run", "/tmp"}, m.Path):
			errs.add(p, fmt.Sprintf("%s is the sandbox's own (or the whole host); mount something below it", m.Path))
		}
	}
}

// validateAllow checks network.allow rules: names, wildcards, IPs, ports
// and methods.
func validateAllow(errs *Errors, path string, rules []AllowRule) {
	for i, r := range rules {
		p := fmt.Sprintf("%s[%d]", path, i)
		if msg := allowHost(r.Host); msg != "" {
			errs.add(p+".host", msg)
		}
		for _, port := range r.Ports {
			if port < 1 || port > 65535 {
				errs.add(p+".ports", fmt.Sprintf("%d: want 1-65535", port))
			}
		}
		for _, m := range r.Methods {
			if m == "" || strings.ToUpper(m) != m || strings.ContainsFunc(m, func(c rune) bool { return c < 'A' || c > 'Z' }) {
				errs.add(p+".methods", fmt.Sprintf("%q: want upper-case methods such as GET", truncate(m, 20)))
			}
		}
	}
}

// allowHost says what is wrong with an allow rule's host, "" when nothing.
func allowHost(h string) string {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.IsUnspecified() {
			return "an unspecified address (0.0.0.0, ::) dials this host itself: name the address"
		}
		return ""
	}
	name := strings.TrimPrefix(h, "*.")
	switch {
	case h == "" || h == "*":
		return `want a host such as "api.github.com", "*.githubusercontent.com" or an IP`
	case strings.Contains(name, "*"):
		return `a wildcard is "*." before a name, such as "*.example.com"`
	case hostName(name) != "":
		return `want a host such as "api.github.com", "*.githubusercontent.com" or an IP, without scheme, port or path`
	case !strings.Contains(name, ".") && strings.HasPrefix(h, "*."):
		return `a wildcard needs a domain with a dot ("*.example.com"), not a top-level domain`
	}
	return ""
}

// validateSandboxProject checks a project's and its stages' sandbox parts
// and its injected secrets.
func validateSandboxProject(errs *Errors, path string, p Pipeline, on bool) {
	validateLimits(errs, path+".sandbox.limits", p.Sandbox.Limits)
	validateMounts(errs, path+".sandbox.mounts", p.Sandbox.Mounts)
	validateAllow(errs, path+".sandbox.network.allow", p.Sandbox.Network.Allow)
	for i, st := range p.Stages {
		sp := fmt.Sprintf("%s.stages[%d].sandbox", path, i)
		validateLimits(errs, sp+".limits", st.Sandbox.Limits)
		if len(st.Sandbox.Network.Allow) > 0 || len(st.Sandbox.Mounts) > 0 {
			errs.add(sp, "a stage sets limits only; list hosts and mounts on the project's pipeline.sandbox")
		}
	}
	for i, s := range p.Secrets {
		if s.Inject == nil {
			continue
		}
		sp := fmt.Sprintf("%s.secrets[%d].inject", path, i)
		if !on {
			errs.add(sp, "needs the sandbox: with sandbox.mode off the pipeline has the network itself and would hold the placeholder only")
		}
		if msg := allowHost(s.Inject.Host); msg != "" || strings.HasPrefix(s.Inject.Host, "*.") {
			errs.add(sp+".host", "want one exact host such as api.github.com")
		}
		if !envName.MatchString(strings.ReplaceAll(s.Inject.Header, "-", "_")) {
			errs.add(sp+".header", `want a header name such as "Authorization"`)
		}
	}
	if on && p.RunAs != "" {
		errs.add(path+".run_as", "the sandbox gives each run a uid of its own; remove run_as, or set sandbox.mode: off to run pipelines as this user")
	}
	for i, st := range p.Stages {
		if on && st.RunAs != "" {
			errs.add(fmt.Sprintf("%s.stages[%d].run_as", path, i), "the sandbox gives each run a uid of its own; remove run_as, or set sandbox.mode: off")
		}
	}
}
