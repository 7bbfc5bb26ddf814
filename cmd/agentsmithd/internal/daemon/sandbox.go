package daemon

import (
	"net"
	"net/netip"
	"os"
	"strconv"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runbox"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

// sandboxing is how this replica's executor shuts its runs in: nil when
// the config turns the sandbox off or no init binary was given (tests that
// run the daemon inside the test binary).
func (d *Daemon) sandboxing(opts Options) (*runbox.Config, error) {
	s := d.cfg.Sandbox
	if !s.On() || opts.SandboxExe == "" {
		return nil, nil
	}
	return &runbox.Config{
		Exe:    opts.SandboxExe,
		UIDs:   sandbox.Range{First: uint32(s.UIDRange.First), Count: uint32(s.UIDRange.Count)},
		Limits: projects.RunLimits(s.Limits), Allow: projects.AllowRules(s.Network.Allow), Mounts: projects.Mounts(s.Mounts),
		Hide:      append(append([]string{}, opts.SandboxHide...), d.cfg.Consumer.Output.LogsDir),
		Private:   []string{d.cfg.Consumer.WorkDir, lifecycle.GitRoot(d.cfg.Consumer.WorkDir), d.cfg.Consumer.Output.LogsDir},
		Listeners: d.ownAddrs, Intercept: true,
		Refused: d.metrics.EgressRefused, LimitKilled: d.metrics.LimitKill,
	}, nil
}

// ownAddrs are the daemon's own listeners (as bound, once listening) and
// its Redis, which no rule of a run may open.
func (d *Daemon) ownAddrs() []netip.AddrPort {
	addrs := []string{d.cfg.Listen, d.cfg.AdminListen}
	if a := d.Addr(); a != "" {
		addrs = append(addrs, a, d.AdminAddr())
	}
	return listenerAddrs(append(addrs, d.cfg.Redis.Addrs...))
}

// listenerAddrs are host:port addresses as AddrPorts; a name is resolved
// now, and an unspecified address stands for every address of the host.
func listenerAddrs(hostports []string) []netip.AddrPort {
	var out []netip.AddrPort
	add := func(hostport string) {
		host, p, err := net.SplitHostPort(hostport)
		if err != nil {
			return
		}
		port, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return
		}
		if host == "" {
			host = "::"
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
			return
		}
		ips, _ := net.LookupIP(host)
		for _, ip := range ips {
			if a, ok := netip.AddrFromSlice(ip); ok {
				out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(port)))
			}
		}
	}
	for _, hp := range hostports {
		add(hp)
	}
	return out
}

// logSandbox says once how runs are shut in.
func (d *Daemon) logSandbox(sb *runbox.Config) {
	switch {
	case sb != nil && os.Geteuid() == 0:
		d.log.Info("pipelines run in a sandbox each: their own uid, namespaces and egress proxy",
			zap.Uint32("uidFirst", sb.UIDs.First), zap.Uint32("uids", sb.UIDs.Count))
	case sb != nil:
		d.log.Info("pipelines run in a sandbox each (namespaces and egress proxy) as this daemon's uid: run the daemon as root for a uid per run",
			zap.Int("uid", os.Getuid()))
	case !d.cfg.Sandbox.On():
		d.log.Warn("sandbox.mode is off: pipelines run with this daemon's network and view of the host; each run says so again")
	}
}
