package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
)

// publicAddr stands for a public address the fake resolver gives names;
// the recording dialer sends connections for it to a local server.
var publicAddr = netip.MustParseAddr("198.51.100.7")

// fakeResolver answers from a map; unknown names fail.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ss, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// recordingDialer records every address the proxy dials and connects
// publicAddr:port to the local address dst[port]; anything else fails,
// so no test reaches past loopback.
type recordingDialer struct {
	mu     sync.Mutex
	dialed []string
	dst    map[uint16]string
}

func (d *recordingDialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial of a non-address %q", addr)
	}
	to, ok := d.dst[ap.Port()]
	if ap.Addr() != publicAddr || !ok {
		// Tests never leave the machine: only the mapped address dials.
		return nil, fmt.Errorf("test dialer: no route to %s", addr)
	}
	addr = to
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *recordingDialer) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// refusals collects OnRefuse calls.
type refusals struct {
	mu   sync.Mutex
	list []Refusal
}

func (r *refusals) add(x Refusal) {
	r.mu.Lock()
	r.list = append(r.list, x)
	r.mu.Unlock()
}

func (r *refusals) all() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.list...)
}

// start serves p on a loopback port and returns the proxy's address; the
// cleanup closes p and checks Serve returned nil.
func start(t *testing.T, p *Proxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		_ = p.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return ln.Addr().String()
}

// client goes through the proxy at addr, trusting roots for https.
func client(addr string, roots *x509.CertPool) *http.Client {
	u := &url.URL{Scheme: "http", Host: addr}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyURL(u),
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			DisableKeepAlives: true,
		},
		Timeout: 10 * time.Second,
	}
}

func mustRule(t *testing.T, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func portOf(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// get does a GET through c and returns status and body.
func do(t *testing.T, c *http.Client, method, rawURL string, hdr http.Header) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// rawConnect sends CONNECT authority on a fresh connection and returns
// the status line's code, the body and the connection.
func rawConnect(t *testing.T, proxyAddr, authority string) (int, string, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", authority, err)
	}
	var body string
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	if br.Buffered() > 0 {
		t.Fatalf("CONNECT %s: %d bytes after the response head", authority, br.Buffered())
	}
	_ = c.SetDeadline(time.Time{})
	return resp.StatusCode, body, c
}

func echoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s host=%s", r.Method, r.URL.Path, r.Host)
	})
}

// TestPlainGetByIPRule: an IP rule reaches a loopback server over http://,
// the request arrives in origin form with its path, and hop-by-hop and
// proxy headers are stripped.
func TestPlainGetByIPRule(t *testing.T) {
	var got http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		fmt.Fprintf(w, "hello %s", r.URL.RequestURI())
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p := &Proxy{Policy: Policy{Allow: []Rule{mustRule(t, u.Host)}}}
	addr := start(t, p)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s/a?b=1 HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nConnection: X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n\r\n", up.URL, u.Host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "hello /a?b=1" {
		t.Fatalf("got %d %q", resp.StatusCode, b)
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Drop", "Connection"} {
		if got.Get(h) != "" {
			t.Errorf("upstream received %s", h)
		}
	}
	if got.Get("X-Keep") != "2" {
		t.Errorf("upstream lost X-Keep: %v", got)
	}
}

// TestConnectTunnelByIPRule: a CONNECT to an IP rule's address is spliced
// through to a TLS server the client verifies end to end.
func TestConnectTunnelByIPRule(t *testing.T) {
	up := httptest.NewTLSServer(echoHandler())
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p := &Proxy{Policy: Policy{Allow: []Rule{mustRule(t, u.Host)}}}
	addr := start(t, p)
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())
	code, body, err := do(t, client(addr, roots), "POST", up.URL+"/x", nil)
	if err != nil || code != 200 || !strings.HasPrefix(body, "POST /x") {
		t.Fatalf("got %d %q %v", code, body, err)
	}
}

// TestNameRulesDialTheCheckedAddress: a name rule resolves through the
// Resolver and dials the address it checked, never the name; over http
// and CONNECT.
func TestNameRulesDialTheCheckedAddress(t *testing.T) {
	plain := httptest.NewServer(echoHandler())
	defer plain.Close()
	tlsUp := httptest.NewTLSServer(echoHandler())
	defer tlsUp.Close()
	d := &recordingDialer{dst: map[uint16]string{80: plain.Listener.Addr().String(), 443: tlsUp.Listener.Addr().String()}}
	p := &Proxy{
		Policy:   Policy{Allow: []Rule{mustRule(t, "allowed.test"), mustRule(t, "api.example.com:443")}},
		Resolver: fakeResolver{"allowed.test": {publicAddr.String()}, "api.example.com": {publicAddr.String()}},
		Dial:     d.Dial,
	}
	addr := start(t, p)
	roots := x509.NewCertPool()
	roots.AddCert(tlsUp.Certificate())
	c := client(addr, roots)
	if code, body, err := do(t, c, "GET", "http://allowed.test/p", nil); err != nil || code != 200 || body != "GET /p host=allowed.test" {
		t.Fatalf("http: %d %q %v", code, body, err)
	}
	if code, body, err := do(t, c, "GET", "https://api.example.com/q", nil); err != nil || code != 200 || body != "GET /q host=api.example.com" {
		t.Fatalf("https: %d %q %v", code, body, err)
	}
	want := []string{"198.51.100.7:80", "198.51.100.7:443"}
	if got := d.got(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("dialled %v, want %v", got, want)
	}
}

// TestUnlistedHostRefused: a host no rule names gets 403 with the host
// and the fix line, OnRefuse hears it once, and nothing is dialled; an
// IP literal without an IP rule is refused the same way.
func TestUnlistedHostRefused(t *testing.T) {
	d := &recordingDialer{}
	var rs refusals
	p := &Proxy{
		Policy:   Policy{Allow: []Rule{mustRule(t, "allowed.test")}},
		Resolver: fakeResolver{"other.test": {publicAddr.String()}},
		Dial:     d.Dial,
		OnRefuse: rs.add,
	}
	addr := start(t, p)
	code, body, err := do(t, client(addr, nil), "GET", "http://other.test/", nil)
	if err != nil || code != 403 {
		t.Fatalf("got %d %v", code, err)
	}
	for _, want := range []string{"other.test:80", "not in sandbox.network.allow", `sandbox.network.allow: ["other.test:80"]`} {
		if !strings.Contains(body, want) {
			t.Errorf("body %q lacks %q", body, want)
		}
	}
	code, body, _ = rawConnect(t, addr, "other.test:443")
	if code != 403 || !strings.Contains(body, `sandbox.network.allow: ["other.test:443"]`) {
		t.Fatalf("CONNECT: %d %q", code, body)
	}
	code, _, _ = rawConnect(t, addr, "198.51.100.7:443")
	if code != 403 {
		t.Fatalf("CONNECT to an IP literal: %d", code)
	}
	got := rs.all()
	if len(got) != 3 {
		t.Fatalf("OnRefuse heard %d refusals, want 3: %v", len(got), got)
	}
	want := Refusal{Host: "other.test", Port: 80, Method: "GET", Reason: "not in sandbox.network.allow"}
	if got[0].Host != want.Host || got[0].Port != want.Port || got[0].Method != want.Method || got[0].Reason != want.Reason {
		t.Errorf("refusal %+v, want %+v", got[0], want)
	}
	if got[0].Fix() != `sandbox.network.allow: ["other.test:80"]` {
		t.Errorf("Fix %q", got[0].Fix())
	}
	if got[1].Method != "CONNECT" || got[2].Host != "198.51.100.7" {
		t.Errorf("refusals %+v", got)
	}
	if len(d.got()) != 0 {
		t.Errorf("dialled %v", d.got())
	}
}

// TestNamesResolvingInwardRefused: a name allowed by a rule but resolving
// to loopback, private, link-local (metadata), CGNAT, mapped or embedded
// forms of those is refused before any dial, over http and CONNECT, and
// one bad address among good ones refuses the name.
func TestNamesResolvingInwardRefused(t *testing.T) {
	cases := map[string][]string{
		"loop.in.test":      {"127.0.0.1"},
		"ten.in.test":       {"10.0.0.1"},
		"meta.in.test":      {"169.254.169.254"},
		"v6loop.in.test":    {"::1"},
		"mapped.in.test":    {"::ffff:127.0.0.1"},
		"cgnat.in.test":     {"100.64.0.1"},
		"nat64.in.test":     {"64:ff9b::a9fe:a9fe"},
		"ula.in.test":       {"fd00:ec2::254"},
		"zero.in.test":      {"0.0.0.0"},
		"mixed.in.test":     {publicAddr.String(), "192.168.1.1"},
		"bcast.in.test":     {"255.255.255.255"},
		"linklocal.in.test": {"fe80::1"},
	}
	d := &recordingDialer{}
	var rs refusals
	p := &Proxy{
		Policy:   Policy{Allow: []Rule{mustRule(t, "*.in.test")}},
		Resolver: fakeResolver(cases),
		Dial:     d.Dial,
		OnRefuse: rs.add,
	}
	addr := start(t, p)
	c := client(addr, nil)
	for name := range cases {
		code, body, err := do(t, c, "GET", "http://"+name+"/", nil)
		if err != nil || code != 403 || !strings.Contains(body, "only a rule naming the IP literal") {
			t.Errorf("%s over http: %d %q %v", name, code, body, err)
		}
		code, body, _ = rawConnect(t, addr, name+":443")
		if code != 403 || !strings.Contains(body, "resolves to") {
			t.Errorf("%s CONNECT: %d %q", name, code, body)
		}
	}
	if len(d.got()) != 0 {
		t.Errorf("dialled %v", d.got())
	}
	got := rs.all()
	if len(got) != 2*len(cases) {
		t.Fatalf("%d refusals, want %d", len(got), 2*len(cases))
	}
	for _, r := range got {
		if r.Addr == "" || !strings.Contains(r.Reason, r.Addr) || !strings.Contains(r.Fix(), r.Addr) {
			t.Errorf("refusal %+v (fix %q) does not name its address", r, r.Fix())
		}
	}
	for _, r := range got {
		if r.Host == "meta.in.test" && r.Reason != "resolves to a link-local (cloud metadata) address (169.254.169.254)" {
			t.Errorf("metadata refusal %q", r.Reason)
		}
	}
}

// TestWildcardAndPorts: "*.example.com" matches any depth of subdomain,
// not the bare domain nor a name merely ending in the same letters; a port
// the rule does not list is refused with a fix naming it.
func TestWildcardAndPorts(t *testing.T) {
	pol := Policy{Allow: []Rule{mustRule(t, "*.example.com"), mustRule(t, "git.test:22,8443")}}
	for _, c := range []struct {
		host string
		port int
		ok   bool
	}{
		{"a.example.com", 443, true},
		{"a.b.example.com", 80, true},
		{"example.com", 443, false},
		{"evilexample.com", 443, false},
		{"a.example.com.evil.test", 443, false},
		{"a.example.com", 8443, false},
		{"git.test", 22, true},
		{"git.test", 8443, true},
		{"git.test", 443, false},
	} {
		host, ip, err := normalizeHost(c.host)
		if err != nil {
			t.Fatal(err)
		}
		if g := pol.match(host, ip, c.port); g.ok != c.ok {
			t.Errorf("%s:%d: ok=%v, want %v", c.host, c.port, g.ok, c.ok)
		}
	}

	up := httptest.NewServer(echoHandler())
	defer up.Close()
	d := &recordingDialer{dst: map[uint16]string{80: up.Listener.Addr().String()}}
	var rs refusals
	p := &Proxy{Policy: pol, Dial: d.Dial, OnRefuse: rs.add, Resolver: fakeResolver{
		"a.b.example.com": {publicAddr.String()}, "example.com": {publicAddr.String()}, "evilexample.com": {publicAddr.String()},
	}}
	addr := start(t, p)
	c := client(addr, nil)
	if code, _, err := do(t, c, "GET", "http://a.b.example.com/", nil); err != nil || code != 200 {
		t.Fatalf("a.b.example.com: %d %v", code, err)
	}
	for _, h := range []string{"example.com", "evilexample.com"} {
		if code, _, err := do(t, c, "GET", "http://"+h+"/", nil); err != nil || code != 403 {
			t.Errorf("%s: %d %v", h, code, err)
		}
	}
	code, body, _ := rawConnect(t, addr, "a.b.example.com:8443")
	if code != 403 || !strings.Contains(body, "port 8443") || !strings.Contains(body, `["a.b.example.com:8443"]`) {
		t.Fatalf("unlisted port: %d %q", code, body)
	}
}

// TestIPRuleLiftsRangeChecksOnlyForItsAddress: "127.0.0.1:port" reaches
// the local server by IP, but a name resolving to 127.0.0.1 stays
// refused, and Policy.Deny refuses even the IP rule.
func TestIPRuleLiftsRangeChecksOnlyForItsAddress(t *testing.T) {
	up := httptest.NewServer(echoHandler())
	defer up.Close()
	port := portOf(t, up.URL)
	var rs refusals
	p := &Proxy{
		Policy: Policy{Allow: []Rule{
			{Host: "127.0.0.1", Ports: []int{port}},
			{Host: "local.test", Ports: []int{port}},
		}},
		Resolver: fakeResolver{"local.test": {"127.0.0.1"}},
		OnRefuse: rs.add,
	}
	addr := start(t, p)
	c := client(addr, nil)
	if code, _, err := do(t, c, "GET", up.URL+"/", nil); err != nil || code != 200 {
		t.Fatalf("by IP: %d %v", code, err)
	}
	if code, _, err := do(t, c, "GET", fmt.Sprintf("http://local.test:%d/", port), nil); err != nil || code != 403 {
		t.Fatalf("by name: %d %v", code, err)
	}

	var rs2 refusals
	p2 := &Proxy{
		Policy:   Policy{Allow: []Rule{{Host: "127.0.0.1", Ports: []int{port}}}, Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		OnRefuse: rs2.add,
	}
	addr2 := start(t, p2)
	code, body, err := do(t, client(addr2, nil), "GET", up.URL+"/", nil)
	if err != nil || code != 403 || !strings.Contains(body, "denied range") || !strings.Contains(body, "the daemon denies") {
		t.Fatalf("denied IP rule: %d %q %v", code, body, err)
	}
}

// TestDenyPrefixRefusesName: a public address in Policy.Deny is refused
// for a name rule, over http and CONNECT.
func TestDenyPrefixRefusesName(t *testing.T) {
	d := &recordingDialer{}
	var rs refusals
	p := &Proxy{
		Policy:   Policy{Allow: []Rule{mustRule(t, "allowed.test")}, Deny: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}},
		Resolver: fakeResolver{"allowed.test": {publicAddr.String()}},
		Dial:     d.Dial,
		OnRefuse: rs.add,
	}
	addr := start(t, p)
	if code, _, err := do(t, client(addr, nil), "GET", "http://allowed.test/", nil); err != nil || code != 403 {
		t.Fatalf("http: %d %v", code, err)
	}
	if code, _, _ := rawConnect(t, addr, "allowed.test:443"); code != 403 {
		t.Fatalf("CONNECT: %d", code)
	}
	got := rs.all()
	if len(got) != 2 || got[0].Addr != "198.51.100.7" || !strings.Contains(got[0].Reason, "denied range") {
		t.Fatalf("refusals %+v", got)
	}
	if len(d.got()) != 0 {
		t.Errorf("dialled %v", d.got())
	}
}

// interceptSetup serves an https upstream as api.example.com (the test
// certificate covers *.example.com) and a plain one, both at publicAddr.
func interceptSetup(t *testing.T, h http.Handler) (*recordingDialer, *x509.CertPool) {
	t.Helper()
	tlsUp := httptest.NewTLSServer(h)
	t.Cleanup(tlsUp.Close)
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	roots := x509.NewCertPool()
	roots.AddCert(tlsUp.Certificate())
	return &recordingDialer{dst: map[uint16]string{443: tlsUp.Listener.Addr().String(), 80: plain.Listener.Addr().String()}}, roots
}

func caPool(t *testing.T, ca *CA) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM()) {
		t.Fatal("CertPEM does not parse")
	}
	return pool
}

// TestMethodRules: with "api.example.com GET" a GET passes and a POST is
// refused, over http and over intercepted https where the client trusts
// only CA.CertPEM and the proxy verifies the upstream; without a CA the
// host is refused for CONNECT.
func TestMethodRules(t *testing.T) {
	d, upRoots := interceptSetup(t, echoHandler())
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	var rs refusals
	p := &Proxy{
		Policy:        Policy{Allow: []Rule{mustRule(t, "api.example.com GET")}},
		Resolver:      fakeResolver{"api.example.com": {publicAddr.String()}},
		Dial:          d.Dial,
		OnRefuse:      rs.add,
		CA:            ca,
		UpstreamRoots: upRoots,
	}
	addr := start(t, p)
	c := client(addr, caPool(t, ca))
	for _, scheme := range []string{"http", "https"} {
		if code, body, err := do(t, c, "GET", scheme+"://api.example.com/r", nil); err != nil || code != 200 || body != "GET /r host=api.example.com" {
			t.Fatalf("%s GET: %d %q %v", scheme, code, body, err)
		}
		code, body, err := do(t, c, "POST", scheme+"://api.example.com/r", nil)
		if err != nil || code != 403 || !strings.Contains(body, "method POST not allowed") || !strings.Contains(body, `GET POST"]`) {
			t.Fatalf("%s POST: %d %q %v", scheme, code, body, err)
		}
	}
	got := rs.all()
	if len(got) != 2 || got[1].Method != "POST" || got[1].Port != 443 {
		t.Fatalf("refusals %+v", got)
	}
	if got[1].Fix() != `sandbox.network.allow: ["api.example.com:443 GET POST"]` {
		t.Errorf("Fix %q", got[1].Fix())
	}

	// The client must not be able to bypass the check with a Host header
	// naming another host inside the tunnel.
	pool := caPool(t, ca)
	code, _, conn := rawConnect(t, addr, "api.example.com:443")
	if code != 200 {
		t.Fatalf("CONNECT: %d", code)
	}
	tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "api.example.com"})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: other.example.com\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("Host mismatch: %v %v", resp, err)
	}

	// No CA: a host with methods cannot be tunnelled.
	var rs2 refusals
	p2 := &Proxy{Policy: p.Policy, Resolver: p.Resolver, Dial: d.Dial, OnRefuse: rs2.add}
	addr2 := start(t, p2)
	code, body, _ := rawConnect(t, addr2, "api.example.com:443")
	if code != 403 || !strings.Contains(body, "interception is off") {
		t.Fatalf("no CA: %d %q", code, body)
	}
}

// TestInject: the client sends the placeholder; the upstream receives the
// real value in the configured format; no response, refusal, Fix or
// error the proxy makes carries the secret.
func TestInject(t *testing.T) {
	const placeholder = "agentsmith-placeholder-GH_TOKEN"
	const secret = "ghp_S3CRETs3cret"
	var mu sync.Mutex
	var seen []string
	d, upRoots := interceptSetup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	var rs refusals
	pol := Policy{
		Allow:  []Rule{mustRule(t, "api.example.com"), mustRule(t, "up.example.com GET")},
		Inject: []Inject{{Host: "api.example.com", Header: "Authorization", Placeholder: placeholder, Value: secret}},
	}
	p := &Proxy{
		Policy: pol, CA: ca, UpstreamRoots: upRoots, Dial: d.Dial, OnRefuse: rs.add,
		Resolver: fakeResolver{"api.example.com": {publicAddr.String()}, "up.example.com": {publicAddr.String()}},
	}
	addr := start(t, p)
	c := client(addr, caPool(t, ca))
	hdr := http.Header{"Authorization": {"token " + placeholder}}
	var bodies []string
	code, body, err := do(t, c, "GET", "https://api.example.com/user", hdr)
	if err != nil || code != 200 || body != "ok" {
		t.Fatalf("inject: %d %q %v", code, body, err)
	}
	code, body, err = do(t, c, "GET", "https://api.example.com/user", http.Header{"Authorization": {"token mine"}})
	if err != nil || code != 200 {
		t.Fatalf("own token: %d %q %v", code, body, err)
	}
	// Over http the secret is not sent in clear: refused.
	code, body, err = do(t, c, "GET", "http://api.example.com/user", hdr)
	if err != nil || code != 403 {
		t.Fatalf("http with placeholder: %d %q %v", code, body, err)
	}
	bodies = append(bodies, body)
	// The placeholder sent to another host is not replaced (and refused
	// here for its method).
	code, body, _ = do(t, c, "POST", "https://up.example.com/", hdr)
	if code != 403 {
		t.Fatalf("other host POST: %d", code)
	}
	bodies = append(bodies, body)
	code, body, _ = do(t, c, "GET", "https://up.example.com/", hdr)
	if code != 200 {
		t.Fatalf("other host GET: %d", code)
	}
	bodies = append(bodies, body)

	mu.Lock()
	want := []string{"token " + secret, "token mine", "token " + placeholder}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("upstream saw %q, want %q", seen, want)
	}
	mu.Unlock()
	for _, b := range bodies {
		if strings.Contains(b, secret) {
			t.Errorf("a response to the client holds the secret: %q", b)
		}
	}
	for _, r := range rs.all() {
		if strings.Contains(fmt.Sprintf("%+v %s %s", r, r.Fix(), r), secret) {
			t.Errorf("a refusal holds the secret: %+v", r)
		}
	}

	// Errors naming an Inject never quote its Value.
	bad := &Proxy{Policy: Policy{Inject: []Inject{{Host: "api.example.com", Header: "Authorization", Placeholder: placeholder, Value: secret}}}}
	if err := bad.Serve(nil); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Serve without CA: %v", err)
	}
	for _, in := range []Inject{
		{Host: "*.example.com", Header: "Authorization", Placeholder: placeholder, Value: secret},
		{Host: "api.example.com", Header: "Bad Header", Placeholder: placeholder, Value: secret},
		{Host: "api.example.com", Header: "Authorization", Placeholder: "short", Value: secret},
		{Host: "api.example.com", Header: "Authorization", Placeholder: placeholder, Value: secret + "\r\nX: " + placeholder},
	} {
		err := Policy{Inject: []Inject{in}}.Validate()
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("Validate(%+v) = %v", in.Host, err)
		}
	}
}

// TestBadRequests: requests that are not proxy requests get 400, and an
// over-long header block 431, never a panic or a dial.
func TestBadRequests(t *testing.T) {
	d := &recordingDialer{}
	p := &Proxy{Policy: Policy{Allow: []Rule{mustRule(t, "allowed.test")}}, Dial: d.Dial,
		Resolver: fakeResolver{"allowed.test": {publicAddr.String()}}, MaxHeaderBytes: 4096}
	addr := start(t, p)
	for _, req := range []string{
		"GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT allowed.test:0 HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT user@allowed.test:443 HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT 127.1:443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://allowed.test:99999/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX-Big: " + strings.Repeat("a", 10000) + "\r\n\r\n",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		_ = c.Close()
		if err != nil || (resp.StatusCode != 400 && resp.StatusCode != 431) {
			t.Errorf("%.60q: %v %v", req, resp, err)
		}
	}
	if len(d.got()) != 0 {
		t.Errorf("dialled %v", d.got())
	}
}

// TestUpstreamDown: a dial failure answers 502.
func TestUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	p := &Proxy{Policy: Policy{Allow: []Rule{mustRule(t, dead)}}}
	addr := start(t, p)
	if code, _, err := do(t, client(addr, nil), "GET", "http://"+dead+"/", nil); err != nil || code != 502 {
		t.Fatalf("got %d %v", code, err)
	}
	if code, _, _ := rawConnect(t, addr, dead); code != 502 {
		t.Fatalf("CONNECT got %d", code)
	}
}

// TestConnCap: a connection over MaxConns is answered 503 and closed;
// closing one frees its slot.
func TestConnCap(t *testing.T) {
	p := &Proxy{MaxConns: 2}
	addr := start(t, p)
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The proxy has the two once a request on each is answered.
	for _, c := range held {
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 400 {
			t.Fatalf("held conn: %v %v", resp, err)
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	_ = c.Close()
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("third conn: %v %v", resp, err)
	}
	_ = held[0].Close()
	eventually.Wait(t, 5*time.Second, "a slot frees", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		return err == nil && resp.StatusCode == 400
	})
	_ = held[1].Close()
}

// TestCloseEndsServeTunnelsAndGoroutines: Close makes Serve return, cuts
// an open tunnel and an intercepted session, and leaves no goroutine
// behind.
func TestCloseEndsServeTunnelsAndGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	tlsUp := httptest.NewTLSServer(echoHandler())
	defer tlsUp.Close()
	upRoots := x509.NewCertPool()
	upRoots.AddCert(tlsUp.Certificate())
	d := &recordingDialer{dst: map[uint16]string{443: tlsUp.Listener.Addr().String()}}
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	d.dst[7000] = echo.Addr().String()
	p := &Proxy{
		Policy:   Policy{Allow: []Rule{mustRule(t, "echo.test:7000"), mustRule(t, "api.example.com GET")}},
		Resolver: fakeResolver{"api.example.com": {publicAddr.String()}, "echo.test": {publicAddr.String()}},
		Dial:     d.Dial, CA: ca, UpstreamRoots: upRoots,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	addr := ln.Addr().String()

	code, _, tun := rawConnect(t, addr, "echo.test:7000")
	if code != 200 {
		t.Fatalf("CONNECT: %d", code)
	}
	fmt.Fprint(tun, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(tun, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("tunnel echo: %q %v", buf, err)
	}
	code, _, ic := rawConnect(t, addr, "api.example.com:443")
	if code != 200 {
		t.Fatalf("CONNECT intercept: %d", code)
	}
	tc := tls.Client(ic, &tls.Config{RootCAs: caPool(t, ca), ServerName: "api.example.com"})
	fmt.Fprint(tc, "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("intercepted GET: %v %v", resp, err)
	}
	_, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<10))

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	_ = tun.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tun.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("tunnel still open after Close: %v", err)
	}
	_ = ic.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("intercepted session still open after Close")
	}
	_ = tun.Close()
	_ = ic.Close()
	_ = echo.Close()
	tlsUp.Close() // returns once the proxy's upstream connections are gone
	eventually.Wait(t, 10*time.Second, "goroutines back to the count before the test", func() bool {
		return runtime.NumGoroutine() <= before
	})
	if err := p.Serve(ln); err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
}

// TestServeReturnsWhenListenerCloses: the caller closing the listener
// ends Serve with nil.
func TestServeReturnsWhenListenerCloses(t *testing.T) {
	p := &Proxy{}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	_ = ln.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}
