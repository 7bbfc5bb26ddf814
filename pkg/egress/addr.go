package egress

import (
	"fmt"
	"net/netip"
)

// refusedRanges are the destinations a name may not resolve to: the
// sandbox host's own services, its network's neighbours and the cloud
// metadata service (169.254.169.254, fd00:ec2::254) would otherwise be one
// DNS record away from any pipeline. IPv4-mapped addresses are unmapped
// before the check; IPv6 forms that embed an IPv4 address are checked
// again on the embedded address (embedded below).
var refusedRanges = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a CGNAT (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol-assignment (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast (240.0.0.0/4)"},
	{netip.MustParsePrefix("::/96"), "an unspecified, loopback or IPv4-compatible (::/96)"},
	{netip.MustParsePrefix("100::/64"), "a discard-only (100::/64)"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast"},
}

// embedded returns the IPv4 address an IPv6 address carries in the
// forms a router would act on: NAT64 (64:ff9b::/96, 64:ff9b:1::/48 with
// the address in the last 32 bits) and 6to4 (2002::/16, bits 16-48). A
// NAT64 gateway would turn 64:ff9b::7f00:1 into 127.0.0.1 on its side.
func embedded(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() || a.Is4In6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case netip.MustParsePrefix("64:ff9b::/96").Contains(a),
		netip.MustParsePrefix("64:ff9b:1::/48").Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case netip.MustParsePrefix("2002::/16").Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// checkAddr says why a is refused, or "" when a name may lead there;
// denied says a Policy.Deny range refused it. byIP means an IP rule names
// a itself, which lifts the range checks but not deny.
func checkAddr(a netip.Addr, deny []netip.Prefix, byIP bool) (why string, denied bool) {
	a = a.WithZone("")
	for _, d := range deny {
		if d.Contains(a) || d.Contains(a.Unmap()) {
			return fmt.Sprintf("%s is in a denied range (%s)", a, d), true
		}
	}
	if e, ok := embedded(a.Unmap()); ok {
		for _, d := range deny {
			if d.Contains(e) {
				return fmt.Sprintf("%s embeds %s, in a denied range (%s)", a, e, d), true
			}
		}
	}
	if byIP {
		return "", false
	}
	u := a.Unmap()
	if !u.IsValid() {
		return "an invalid address", false
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(u) {
			return fmt.Sprintf("resolves to %s address (%s)", r.why, a), false
		}
	}
	if e, ok := embedded(u); ok {
		for _, r := range refusedRanges {
			if r.prefix.Contains(e) {
				return fmt.Sprintf("resolves to %s embedding %s address (%s)", a, r.why, e), false
			}
		}
	}
	return "", false
}
