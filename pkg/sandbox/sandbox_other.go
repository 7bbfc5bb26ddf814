//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
	"syscall"
)

// errUnsupported is every answer off Linux: the sandbox is Linux
// namespaces.
var errUnsupported = errors.New("sandbox: runs need Linux namespaces; this system has none")

// InitArg is the argument that makes a binary run Init.
const InitArg = "sandbox-init"

// Launch is one prepared sandbox start; off Linux there are none.
type Launch struct{}

// Prepare fails off Linux.
func Prepare(cmd *exec.Cmd, exe string, s Spec) (*Launch, error) { return nil, errUnsupported }

// Started fails off Linux.
func (l *Launch) Started(join ...string) error { return errUnsupported }

// Status reports nothing off Linux.
func (l *Launch) Status() (syscall.WaitStatus, bool) { return 0, false }

// Failure reports nothing off Linux.
func (l *Launch) Failure() string { return "" }

// Close does nothing off Linux.
func (l *Launch) Close() {}

// Init fails off Linux.
func Init() int { return 125 }

// Available reports that there are no sandboxes off Linux.
func Available(exe string) error { return errUnsupported }

// Range is a range of host uids.
type Range struct{ First, Count uint32 }

// DefaultRange is the default uid range.
var DefaultRange = Range{First: 0x70000000, Count: 65536}

// Lease is a leased uid; off Linux there are none.
type Lease struct{}

// UID is 0 off Linux.
func (l *Lease) UID() uint32 { return 0 }

// Release does nothing off Linux.
func (l *Lease) Release() error { return nil }

// LeaseUID fails off Linux.
func LeaseUID(r Range, hint string) (*Lease, error) { return nil, errUnsupported }
