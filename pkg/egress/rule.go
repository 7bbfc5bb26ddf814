package egress

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Rule allows one host: an exact name ("api.github.com"), a "*." wildcard
// ("*.githubusercontent.com": any subdomain at any depth, not the bare
// domain), or an IP literal ("203.0.113.7", "2001:db8::1"). Only a rule
// naming an IP literal lets a connection reach a loopback, private or
// link-local address, and only when the request names that literal: a
// name resolving there is refused whatever the rules say.
//
// Ports nil means 80 and 443. Methods nil means any method; with Methods
// set the host is reachable over http:// (methods checked per request)
// and over https:// only through interception (Proxy.CA), never as a
// blind CONNECT tunnel whose methods cannot be seen.
type Rule struct {
	Host    string
	Ports   []int
	Methods []string
}

// defaultPorts are the ports a Rule without Ports allows.
var defaultPorts = []int{80, 443}

// ParseRule reads one sandbox.network.allow entry:
//
//	HOST[:PORT[,PORT...]] [METHOD...]
//
// for example "api.github.com", "api.github.com:443 GET HEAD",
// "*.example.com:8443", "10.0.0.5:8080", "[2001:db8::1]:443" or a bare
// "2001:db8::1". Names are ASCII only (IDNA is not done: write the
// xn-- form), ports 1-65535, methods upper-case HTTP tokens.
func ParseRule(s string) (Rule, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Rule{}, errors.New("egress: empty rule")
	}
	hostport := fields[0]
	var r Rule
	host, ports, err := splitRuleHostPorts(hostport)
	if err != nil {
		return Rule{}, fmt.Errorf("egress: rule %q: %w", s, err)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		host = strings.ToLower(strings.TrimSuffix(host, "."))
	}
	r.Host = host
	r.Ports = ports
	for _, m := range fields[1:] {
		if !validMethod(m) {
			return Rule{}, fmt.Errorf("egress: rule %q: method %q is not an upper-case HTTP method", s, m)
		}
		r.Methods = append(r.Methods, m)
	}
	if err := r.validate(); err != nil {
		return Rule{}, fmt.Errorf("egress: rule %q: %w", s, err)
	}
	return r, nil
}

// String is the rule in ParseRule's syntax; ParseRule(r.String()) gives r
// back for a valid r.
func (r Rule) String() string {
	var b strings.Builder
	h := r.Host
	if a, err := netip.ParseAddr(h); err == nil && a.Is6() && len(r.Ports) > 0 {
		h = "[" + h + "]"
	}
	b.WriteString(h)
	for i, p := range r.Ports {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(p))
	}
	for _, m := range r.Methods {
		b.WriteByte(' ')
		b.WriteString(m)
	}
	return b.String()
}

// splitRuleHostPorts splits "host", "host:p1,p2", "[v6]:p" and a bare v6
// literal.
func splitRuleHostPorts(s string) (string, []int, error) {
	var host, portList string
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", nil, errors.New("missing ]")
		}
		host, portList = s[1:end], s[end+1:]
		if portList != "" {
			if portList[0] != ':' {
				return "", nil, errors.New("junk after ]")
			}
			portList = portList[1:]
			if portList == "" {
				return "", nil, errors.New("empty port")
			}
		}
		if _, err := netip.ParseAddr(host); err != nil || strings.Contains(host, "%") {
			return "", nil, fmt.Errorf("%q is not an IPv6 literal", host)
		}
	case strings.Count(s, ":") > 1:
		host = s // a bare IPv6 literal: no port
	default:
		host = s
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, portList = s[:i], s[i+1:]
			if portList == "" {
				return "", nil, errors.New("empty port")
			}
		}
	}
	var ports []int
	if portList != "" {
		for _, ps := range strings.Split(portList, ",") {
			p, err := parsePort(ps)
			if err != nil {
				return "", nil, err
			}
			ports = append(ports, p)
		}
	}
	return host, ports, nil
}

// parsePort accepts decimal 1-65535 without sign or leading junk.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 {
		return 0, fmt.Errorf("port %q is not 1-65535", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("port %q is not 1-65535", s)
		}
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %q is not 1-65535", s)
	}
	return p, nil
}

// validate checks a Rule however it was built (config or literal).
func (r Rule) validate() error {
	if r.Host == "" {
		return errors.New("empty host")
	}
	if a, err := netip.ParseAddr(r.Host); err == nil {
		if a.Zone() != "" {
			return errors.New("an IP rule cannot carry a zone")
		}
	} else if suffix, ok := strings.CutPrefix(r.Host, "*."); ok {
		if err := validName(suffix); err != nil {
			return err
		}
		if !strings.Contains(suffix, ".") {
			return fmt.Errorf("wildcard %q would allow a whole top-level domain", r.Host)
		}
	} else if err := validName(r.Host); err != nil {
		return err
	}
	for _, p := range r.Ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("port %d is not 1-65535", p)
		}
	}
	for _, m := range r.Methods {
		if !validMethod(m) {
			return fmt.Errorf("method %q is not an upper-case HTTP method", m)
		}
	}
	return nil
}

// validMethod: an RFC 9110 token in upper case, at most 32 bytes
// (CONNECT is refused: a rule's methods are the ones checked inside a
// connection, and CONNECT-in-CONNECT would be a blind tunnel).
func validMethod(m string) bool {
	if m == "" || len(m) > 32 || m == http.MethodConnect {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if (c < 'A' || c > 'Z') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// validName accepts a lower-case ASCII DNS name: labels of letters,
// digits, '-' and '_' (some real hosts use it), 1-63 bytes, no leading or
// trailing '-', 253 bytes in all, and a last label that starts with a
// letter. The last rule turns away "127.1", "0x7f.1" and "2130706433":
// no top-level domain starts with a digit, and a system resolver reads
// such names as IPv4 addresses in forms netip refuses to parse.
func validName(h string) error {
	if h == "" || len(h) > 253 {
		return fmt.Errorf("host name %q has a bad length", h)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("host name %q has an empty or over-long label", h)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("host name %q has a label starting or ending with '-'", h)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return fmt.Errorf("host name %q is not a lower-case ASCII name", h)
			}
		}
	}
	last := labels[len(labels)-1]
	if last[0] < 'a' || last[0] > 'z' {
		return fmt.Errorf("host name %q has a top-level label not starting with a letter", h)
	}
	return nil
}

// normalizeHost turns a host from a request into the form rules are
// written in: lower case, no trailing dot, IP literals canonical
// (brackets are the authority parser's business). It refuses anything
// that is neither an IP literal without zone nor a valid name.
func normalizeHost(h string) (host string, ip netip.Addr, err error) {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", netip.Addr{}, errors.New("an IP literal with a zone")
		}
		return a.String(), a, nil
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if err := validName(h); err != nil {
		return "", netip.Addr{}, err
	}
	return h, netip.Addr{}, nil
}

// parseAuthority reads "host:port", "[v6]:port" and, when defaultPort is
// not 0, a bare "host" or "[v6]" (absolute-form URLs may omit the port).
// It never panics and refuses userinfo, zones and anything validName
// refuses.
func parseAuthority(s string, defaultPort int) (host string, ip netip.Addr, port int, err error) {
	if s == "" || len(s) > 300 {
		return "", netip.Addr{}, 0, errors.New("empty or over-long authority")
	}
	if strings.ContainsAny(s, "@/?#\\ \t\r\n%") {
		return "", netip.Addr{}, 0, fmt.Errorf("authority %q has characters a host cannot", s)
	}
	var h, ps string
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", netip.Addr{}, 0, errors.New("missing ]")
		}
		h, ps = s[1:end], s[end+1:]
		a, perr := netip.ParseAddr(h)
		if perr != nil || !a.Is6() {
			return "", netip.Addr{}, 0, fmt.Errorf("%q is not an IPv6 literal", h)
		}
		if ps != "" {
			if ps[0] != ':' {
				return "", netip.Addr{}, 0, errors.New("junk after ]")
			}
			ps = ps[1:]
			if ps == "" {
				return "", netip.Addr{}, 0, errors.New("empty port")
			}
		}
	} else {
		if strings.Count(s, ":") > 1 {
			return "", netip.Addr{}, 0, errors.New("an IPv6 literal must be in brackets")
		}
		h = s
		if i := strings.IndexByte(s, ':'); i >= 0 {
			h, ps = s[:i], s[i+1:]
			if ps == "" {
				return "", netip.Addr{}, 0, errors.New("empty port")
			}
		}
		if a, perr := netip.ParseAddr(h); perr == nil && a.Is6() {
			return "", netip.Addr{}, 0, errors.New("an IPv6 literal must be in brackets")
		}
	}
	if ps == "" {
		if defaultPort == 0 {
			return "", netip.Addr{}, 0, errors.New("missing port")
		}
		port = defaultPort
	} else if port, err = parsePort(ps); err != nil {
		return "", netip.Addr{}, 0, err
	}
	host, ip, err = normalizeHost(h)
	if err != nil {
		return "", netip.Addr{}, 0, err
	}
	return host, ip, port, nil
}

// Inject puts a secret into requests to one host. The pipeline holds only
// Placeholder (e.g. "agentsmith-placeholder-GH_TOKEN") and writes it
// where the secret goes, in whatever format the API wants:
// "Authorization: Bearer agentsmith-placeholder-GH_TOKEN" or
// "Authorization: token agentsmith-placeholder-GH_TOKEN". In an
// intercepted https request to Host (exact name, no wildcard), every
// value of Header that contains Placeholder has it replaced by Value;
// any other value, and every other header, body and URL, pass unchanged.
// A request without the placeholder gets no secret. Replacing only the
// placeholder keeps the format in the pipeline's hands, so no Format
// field is needed, and a pipeline that brings its own credential keeps
// it.
//
// The secret is sent only over TLS the proxy verified (UpstreamRoots):
// an http:// request carrying the placeholder to Host is refused rather
// than sending Value in clear text.
type Inject struct {
	Host        string
	Header      string
	Placeholder string
	Value       string
}

// validate checks an Inject; its errors never quote Value.
func (in Inject) validate() error {
	if _, _, err := normalizeHost(in.Host); err != nil || strings.HasPrefix(in.Host, "*") {
		return fmt.Errorf("inject host %q is not an exact host name or IP", in.Host)
	}
	if in.Host != strings.ToLower(in.Host) {
		return fmt.Errorf("inject host %q is not lower case", in.Host)
	}
	if !validToken(in.Header) {
		return fmt.Errorf("inject header %q is not a header name", in.Header)
	}
	switch http.CanonicalHeaderKey(in.Header) {
	case "Host", "Connection", "Proxy-Authorization", "Proxy-Connection", "Transfer-Encoding", "Content-Length", "Upgrade", "Te", "Trailer", "Keep-Alive":
		return fmt.Errorf("inject header %q is not one the proxy passes through", in.Header)
	}
	if len(in.Placeholder) < 8 || !printable(in.Placeholder) {
		return fmt.Errorf("inject placeholder for %s %s must be 8 or more printable bytes", in.Host, in.Header)
	}
	if in.Value == "" || !printable(in.Value) {
		return fmt.Errorf("inject value for %s %s must be non-empty printable ASCII", in.Host, in.Header)
	}
	if strings.Contains(in.Value, in.Placeholder) {
		return fmt.Errorf("inject value for %s %s contains its placeholder", in.Host, in.Header)
	}
	return nil
}

// printable: visible ASCII and space, so no value can split a header.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// validToken: an RFC 9110 token (header names).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// Policy is what one run may reach.
type Policy struct {
	Allow  []Rule
	Inject []Inject
	// Deny lists ranges refused even to an IP rule, e.g. the daemon's own
	// listener addresses (the caller adds them): it is the caller's floor,
	// which the config cannot lift.
	Deny []netip.Prefix
}

// Validate checks every rule and inject; Proxy.Serve calls it. Its errors
// never quote an Inject's Value.
func (p Policy) Validate() error {
	for _, r := range p.Allow {
		if err := r.validate(); err != nil {
			return fmt.Errorf("egress: allow %q: %w", r.Host, err)
		}
	}
	seen := map[string]bool{}
	for _, in := range p.Inject {
		if err := in.validate(); err != nil {
			return fmt.Errorf("egress: %w", err)
		}
		k := in.Host + "\x00" + http.CanonicalHeaderKey(in.Header)
		if seen[k] {
			return fmt.Errorf("egress: two injects for %s %s", in.Host, in.Header)
		}
		seen[k] = true
	}
	for _, d := range p.Deny {
		if !d.IsValid() {
			return errors.New("egress: an invalid Deny prefix")
		}
	}
	return nil
}

// grant is what the matching rules allow for one host and port.
type grant struct {
	// methods is nil when some matching rule allows any method; otherwise
	// the union of the matching rules' methods.
	methods map[string]bool
	// byIP: a rule names the request's IP literal, which lifts the
	// address-range checks (not Deny).
	byIP bool
	// hostAllowed: some rule names the host on another port (for the
	// refusal's reason).
	hostAllowed bool
	ok          bool
}

// match finds what the rules grant host (normalized; ip valid when the
// host is an IP literal) on port.
func (p Policy) match(host string, ip netip.Addr, port int) grant {
	var g grant
	anyMethod := false
	for _, r := range p.Allow {
		if !r.matchesHost(host, ip) {
			continue
		}
		g.hostAllowed = true
		ports := r.Ports
		if ports == nil {
			ports = defaultPorts
		}
		if !containsInt(ports, port) {
			continue
		}
		g.ok = true
		if ip.IsValid() {
			g.byIP = true
		}
		if r.Methods == nil {
			anyMethod = true
			continue
		}
		if g.methods == nil {
			g.methods = map[string]bool{}
		}
		for _, m := range r.Methods {
			g.methods[m] = true
		}
	}
	if anyMethod {
		g.methods = nil
	}
	return g
}

// matchesHost: exact name, wildcard suffix with at least one more label,
// or the same IP literal (an IPv4-mapped IPv6 literal is the IPv4
// address it maps).
func (r Rule) matchesHost(host string, ip netip.Addr) bool {
	if ip.IsValid() {
		ra, err := netip.ParseAddr(r.Host)
		return err == nil && ra.Unmap() == ip.Unmap()
	}
	rh := strings.ToLower(strings.TrimSuffix(r.Host, "."))
	if suffix, ok := strings.CutPrefix(rh, "*"); ok {
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix) && strings.HasPrefix(suffix, ".")
	}
	return rh == host
}

// injects returns the injects for host (normalized).
func (p Policy) injects(host string) []Inject {
	var out []Inject
	for _, in := range p.Inject {
		if strings.ToLower(in.Host) == host {
			out = append(out, in)
		} else if a, err := netip.ParseAddr(in.Host); err == nil && a.String() == host {
			out = append(out, in)
		}
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// sortedMethods lists a grant's methods for messages.
func sortedMethods(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
