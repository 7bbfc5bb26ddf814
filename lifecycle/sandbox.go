package lifecycle

// SandboxPolicy is what a project's runs may use inside their sandbox
// (pkg/sandbox, pkg/egress): its limits, the hosts the egress proxy lets
// them reach, the host paths they see, and the secrets the proxy adds to
// their requests instead of handing them to the pipeline. The daemon's
// own sandbox settings (uid range, defaults every project starts from)
// are the executor's.
type SandboxPolicy struct {
	Limits RunLimits
	Allow  []AllowRule
	Mounts []Mount
	Inject []Injection
}

// RunLimits bound one run. Zero fields are unset (the level above's
// apply); Unlimited lifts a limit.
type RunLimits struct {
	MemoryBytes int64
	Processes   int64
	CPU         float64
}

// Unlimited in a RunLimits field lifts that limit.
const Unlimited = -1

// Over returns l with every unset field taken from base.
func (l RunLimits) Over(base RunLimits) RunLimits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = base.MemoryBytes
	}
	if l.Processes == 0 {
		l.Processes = base.Processes
	}
	if l.CPU == 0 {
		l.CPU = base.CPU
	}
	return l
}

// AllowRule lets a run reach Host (a name, "*.domain" or an IP) on Ports
// (nil: 80 and 443) with Methods (nil: any).
type AllowRule struct {
	Host    string
	Ports   []int
	Methods []string
}

// Mount is a host path a run sees at the same path.
type Mount struct {
	Path     string
	Writable bool
}

// Injection is a pipeline secret the egress proxy puts in the pipeline's
// requests to Host: Placeholder, which the pipeline's variable Name holds,
// becomes Value (the secret) in their Header.
type Injection struct {
	Name, Host, Header, Value, Placeholder string
}
