//go:build !linux

package runcg

// Parent is the cgroup run cgroups are created in; there is none here.
type Parent struct{}

// Detect reports that cgroups are Linux-only.
func Detect() (*Parent, error) { return nil, ErrUnsupported }

// DetectLimits reports that cgroups are Linux-only.
func DetectLimits() (*Parent, error) { return nil, ErrUnsupported }

// Dir is "".
func (p *Parent) Dir() string { return "" }

// Kills is false.
func (p *Parent) Kills() bool { return false }

// JoinNeeded is false.
func (p *Parent) JoinNeeded() bool { return false }

// EnableLimits does nothing.
func (p *Parent) EnableLimits() error { return nil }

// Controllers reports none.
func (p *Parent) Controllers() (mem, pids, cpu bool, where string) {
	return false, false, false, "no cgroups on this OS"
}

// Missing fails for any limit.
func (p *Parent) Missing(l Limits) error {
	if l.IsZero() {
		return nil
	}
	return ErrNoController
}

// New fails: there are no cgroups here.
func (p *Parent) New() (*Group, error) { return nil, ErrUnsupported }

// NewLimited fails: there are no cgroups here.
func (p *Parent) NewLimited(Limits) (*Group, error) { return nil, ErrUnsupported }

// Group is one run's cgroup; never made here.
type Group struct{}

// Dir is "".
func (g *Group) Dir() string { return "" }

// FD is -1.
func (g *Group) FD() int { return -1 }

// JoinDirs is empty.
func (g *Group) JoinDirs() []string { return nil }

// Join does nothing.
func (g *Group) Join(int) error { return nil }

// Join does nothing.
func Join([]string, int) error { return nil }

// Kill does nothing.
func (g *Group) Kill() error { return ErrUnsupported }

// Close does nothing.
func (g *Group) Close() error { return nil }

// Populated is false.
func (g *Group) Populated() (bool, error) { return false, ErrUnsupported }

// LimitHit is "".
func (g *Group) LimitHit() string { return "" }

// KillOwn fails: there are no cgroups here.
func KillOwn() error { return ErrUnsupported }
