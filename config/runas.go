package config

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// geteuid is os.Geteuid, replaced in tests.
var geteuid = os.Geteuid

// RunAsCredential resolves pipeline.run_as ("name", "uid", "name:group" or
// "uid:gid") to the credential the pipeline runs under; nil when unset. A
// user given without a group runs with that user's primary group.
func (p Pipeline) RunAsCredential() (*syscall.Credential, error) {
	if p.RunAs == "" {
		return nil, nil
	}
	u, g, hasGroup := strings.Cut(p.RunAs, ":")
	uid, primary, err := lookupUser(u)
	if err != nil {
		return nil, err
	}
	gid := primary
	if hasGroup {
		if gid, err = lookupGroup(g); err != nil {
			return nil, err
		}
	}
	return &syscall.Credential{Uid: uid, Gid: gid, NoSetGroups: false}, nil
}

func lookupUser(name string) (uid, gid uint32, err error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		// A bare uid need not exist in /etc/passwd (containers): its
		// group is then the same number.
		if u, err := user.LookupId(name); err == nil {
			g, _ := strconv.ParseUint(u.Gid, 10, 32)
			return uint32(n), uint32(g), nil
		}
		return uint32(n), uint32(n), nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", name, err)
	}
	n, err1 := strconv.ParseUint(u.Uid, 10, 32)
	g, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("user %q has no numeric uid/gid", name)
	}
	return uint32(n), uint32(g), nil
}

func lookupGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w", name, err)
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %q has no numeric gid", name)
	}
	return uint32(n), nil
}

// validateRunAs checks pipeline.run_as resolves and that this daemon can
// switch to it: only root (or a process with CAP_SETUID and CAP_SETGID,
// which this check cannot see and so refuses) may start a process as
// another user.
func validateRunAs(errs *Errors, path string, p Pipeline) {
	if p.RunAs == "" {
		return
	}
	cred, err := p.RunAsCredential()
	switch {
	case err != nil:
		errs.add(path+".run_as", err.Error())
	case geteuid() != 0 && uint32(geteuid()) != cred.Uid:
		errs.add(path+".run_as", fmt.Sprintf("the daemon runs as uid %d and cannot start a pipeline as uid %d: run it as root, or drop run_as and keep secrets out of the pipeline's reach another way (docs/security.md)", geteuid(), cred.Uid))
	}
}
