//go:build !linux

package runcg

// Parent is the cgroup run cgroups are created in; there is none here.
type Parent struct{}

// Detect reports that cgroup v2 is Linux-only.
func Detect() (*Parent, error) { return nil, ErrUnsupported }

// Dir is "".
func (p *Parent) Dir() string { return "" }

// New fails: there are no cgroups here.
func (p *Parent) New() (*Group, error) { return nil, ErrUnsupported }

// Group is one run's cgroup; never made here.
type Group struct{}

// Dir is "".
func (g *Group) Dir() string { return "" }

// Kill does nothing.
func (g *Group) Kill() error { return ErrUnsupported }

// Close does nothing.
func (g *Group) Close() error { return nil }

// Populated is false.
func (g *Group) Populated() (bool, error) { return false, ErrUnsupported }

// KillOwn fails: there are no cgroups here.
func KillOwn() error { return ErrUnsupported }
