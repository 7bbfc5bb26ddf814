//go:build !linux

package runguard

import "syscall"

// becomeSubreaper is Linux-only: elsewhere the process group is the bound.
func becomeSubreaper() error { return nil }

// pipelineAttr is how the pipeline is started: as cred.
func pipelineAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// killDescendants is Linux-only; the process group kill remains.
func killDescendants(int) int { return 0 }

// reapOrphans is Linux-only: without a subreaper there are none.
func reapOrphans(int) {}
