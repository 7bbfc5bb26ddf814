package daemon

import (
	"net"
	"net/netip"
	"os"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
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
		Hide: append(append([]string{}, opts.SandboxHide...), d.cfg.Consumer.Output.LogsDir),
		Deny: listenerAddrs(d.cfg), Intercept: true,
		Refused: d.metrics.EgressRefused, LimitKilled: d.metrics.LimitKill,
	}, nil
}

// listenerAddrs are the addresses of the daemon's own listeners and of its
// Redis, which no rule of a run may open: an IP rule can open loopback
// and private ranges, never these. A listener on every address stands
// for each of this host's.
func listenerAddrs(cfg *config.Config) []netip.Prefix {
	var out []netip.Prefix
	add := func(hostport string) {
		host, _, err := net.SplitHostPort(hostport)
		if err != nil {
			return
		}
		if ip, err := netip.ParseAddr(host); err == nil && !ip.IsUnspecified() {
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.BitLen()))
			return
		}
		if host != "" && host != "0.0.0.0" && host != "::" {
			ips, _ := net.LookupIP(host)
			for _, ip := range ips {
				if a, ok := netip.AddrFromSlice(ip); ok {
					out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				}
			}
			return
		}
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				}
			}
		}
	}
	add(cfg.Listen)
	add(cfg.AdminListen)
	for _, a := range cfg.Redis.Addrs {
		add(a)
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
