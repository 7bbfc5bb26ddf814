//go:build !linux

package redisserver

import "os/exec"

// setProcAttr has no portable parent-death signal outside Linux; cleanups
// (t.Cleanup, Process.Stop) are the only guard there.
func setProcAttr(*exec.Cmd) {}
