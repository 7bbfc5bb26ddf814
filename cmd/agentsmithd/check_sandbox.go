package main

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// hostSandbox is what this host gives a sandbox, probed once per check:
// whether one starts (namespaces, the new root), and which limits its
// run cgroups hold.
type hostSandbox struct {
	once     sync.Once
	startErr error
	cgroups  string
	mem      bool
	pids     bool
	cpu      bool
	cgErr    error
}

func (h *hostSandbox) probe() {
	h.once.Do(func() {
		exe, err := os.Executable()
		if err == nil {
			var init string
			var remove func()
			if init, remove, err = sandbox.ReachableExe(exe, ""); err == nil {
				defer remove()
				err = sandbox.Available(init)
			}
		}
		h.startErr = err
		cg, err := runcg.Detect()
		if err != nil {
			cg, err = runcg.DetectLimits()
		}
		if err != nil {
			h.cgErr = err
			return
		}
		h.mem, h.pids, h.cpu, h.cgroups = cg.Controllers()
	})
}

// checkSandbox is the project's "sandbox" row: whether its pipelines run
// shut in here (namespaces), what bounds them (cgroup controllers), whose
// uid they run as, and what the egress proxy lets them reach.
func checkSandbox(cfg *config.Config, pc *config.Project, host *hostSandbox) platforms.CheckResult {
	const name = "sandbox"
	if !cfg.Sandbox.On() {
		return platforms.Warn(name, "sandbox.mode is off: this project's pipelines run with the daemon's network (Redis, the admin listener, the cloud metadata address, the private network) and its view of the host",
			"remove sandbox: {mode: off} where the host allows user namespaces (docs/security.md)")
	}
	host.probe()
	if host.startErr != nil {
		return platforms.Fail(name, "no sandbox starts here, so serve runs no pipeline: "+host.startErr.Error(),
			"fix the host as the message says (Kubernetes: docs/security.md), or set sandbox: {mode: off}")
	}
	var parts []string
	if os.Geteuid() == 0 {
		r := cfg.Sandbox.UIDRange
		parts = append(parts, fmt.Sprintf("a uid of its own per run from %d–%d", r.First, r.First+r.Count-1))
	} else {
		parts = append(parts, fmt.Sprintf("runs share uid %d, the daemon's (root gives each run its own)", os.Getuid()))
	}
	lim := pc.Pipeline.Sandbox.Limits.Over(cfg.Sandbox.Limits)
	parts = append(parts, fmt.Sprintf("limits memory %s, %d processes, %g cpus", lim.Memory, lim.Processes, lim.CPU))
	allow := append(append([]config.AllowRule{}, cfg.Sandbox.Network.Allow...), pc.Pipeline.Sandbox.Network.Allow...)
	if len(allow) == 0 {
		parts = append(parts, "egress: no host allowed (the pipeline has no network)")
	} else {
		hosts := make([]string, 0, len(allow))
		for _, r := range allow {
			hosts = append(hosts, r.Host)
		}
		parts = append(parts, "egress: "+strings.Join(hosts, ", "))
	}
	var missing []string
	switch {
	case host.cgErr != nil:
		missing = []string{"memory", "processes", "cpu"}
	default:
		for _, c := range []struct {
			ok   bool
			what string
		}{{host.mem, "memory"}, {host.pids, "processes"}, {host.cpu, "cpu"}} {
			if !c.ok {
				missing = append(missing, c.what)
			}
		}
	}
	detail := strings.Join(parts, "; ")
	if len(missing) > 0 {
		why := host.cgroups
		if host.cgErr != nil {
			why = host.cgErr.Error()
		}
		return platforms.Warn(name, detail+"; the "+strings.Join(missing, ", ")+" limits do not hold: "+why, runcg.Fix)
	}
	if os.Geteuid() != 0 {
		return platforms.Warn(name, detail, "run the daemon as root so that each run gets a uid of its own and runs cannot reach each other's files")
	}
	return platforms.OK(name, "%s", detail)
}
