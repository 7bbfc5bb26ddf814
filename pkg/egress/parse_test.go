package egress

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// TestParseRule: the config syntax, what it accepts and what it refuses.
func TestParseRule(t *testing.T) {
	ok := map[string]Rule{
		"api.github.com":                 {Host: "api.github.com"},
		"API.GitHub.com.":                {Host: "api.github.com"},
		"api.github.com:443":             {Host: "api.github.com", Ports: []int{443}},
		"*.example.com:8443":             {Host: "*.example.com", Ports: []int{8443}},
		"git.test:22,443 GET HEAD":       {Host: "git.test", Ports: []int{22, 443}, Methods: []string{"GET", "HEAD"}},
		"10.0.0.5:8080":                  {Host: "10.0.0.5", Ports: []int{8080}},
		"[2001:db8::1]:443":              {Host: "2001:db8::1", Ports: []int{443}},
		"2001:db8::1":                    {Host: "2001:db8::1"},
		"  registry.npmjs.org   GET   ":  {Host: "registry.npmjs.org", Methods: []string{"GET"}},
		"under_score.example.com":        {Host: "under_score.example.com"},
		"xn--bcher-kva.example":          {Host: "xn--bcher-kva.example"},
		"api.example.com:443 PROPFIND":   {Host: "api.example.com", Ports: []int{443}, Methods: []string{"PROPFIND"}},
		"a.b.c.d.example.com:65535 POST": {Host: "a.b.c.d.example.com", Ports: []int{65535}, Methods: []string{"POST"}},
	}
	for s, want := range ok {
		got, err := ParseRule(s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{
		"", "   ", "bücher.example", "api.github.com:0", "api.github.com:65536", "api.github.com:",
		"api.github.com:-1", "api.github.com:+443", "api.github.com get", "api.github.com CONNECT",
		"*.com", "*", "*.", "a.*.example.com", "-a.example.com", "a-.example.com", "a..example.com",
		"127.1", "0x7f.0.0.1", "2130706433", "[::1", "[::1]x", "[example.com]:443", "fe80::1%eth0",
		"user@host.example", "host.example/path", "host.example:80:81", strings.Repeat("a", 64) + ".example",
	} {
		if r, err := ParseRule(s); err == nil {
			t.Errorf("ParseRule(%q) = %+v, want an error", s, r)
		}
	}
}

// TestCheckAddr: the ranges a name may not resolve to, and the one it may.
func TestCheckAddr(t *testing.T) {
	for _, s := range []string{
		"0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255",
		"192.168.0.1", "100.64.0.1", "100.127.255.255", "169.254.169.254", "224.0.0.1", "255.255.255.255",
		"240.0.0.1", "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "fe80::1",
		"fd00:ec2::254", "fc00::1", "ff02::1", "64:ff9b::a9fe:a9fe", "2002:a00:1::1", "fec0::1",
	} {
		if why, _ := checkAddr(netip.MustParseAddr(s), nil, false); why == "" {
			t.Errorf("%s passes, want refused", s)
		}
		if why, _ := checkAddr(netip.MustParseAddr(s), nil, true); why != "" {
			t.Errorf("%s refused under its own IP rule: %s", s, why)
		}
	}
	for _, s := range []string{"198.51.100.7", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1"} {
		if why, _ := checkAddr(netip.MustParseAddr(s), nil, false); why != "" {
			t.Errorf("%s refused: %s", s, why)
		}
	}
	deny := []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}
	for _, s := range []string{"198.51.100.7", "::ffff:198.51.100.7", "64:ff9b::c633:6407"} {
		if why, denied := checkAddr(netip.MustParseAddr(s), deny, true); why == "" || !denied {
			t.Errorf("%s under an IP rule and Deny: %q %v", s, why, denied)
		}
	}
}

// FuzzAuthority: parseAuthority never panics, and what it accepts is
// normalized (a second pass gives the same host and port).
func FuzzAuthority(f *testing.F) {
	for _, s := range []string{"a.example.com:443", "[::1]:80", "127.0.0.1:8080", "[::ffff:127.0.0.1]:1", "x:0",
		"[fe80::1%25eth0]:443", "EXAMPLE.com.:443", "a:b:c", "[]:1", ":443", "127.1:80", "\xff:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, ip, port, err := parseAuthority(s, 80)
		if err != nil {
			return
		}
		if port < 1 || port > 65535 || host == "" {
			t.Fatalf("%q: host %q port %d", s, host, port)
		}
		again := hostPort(host, port)
		h2, ip2, p2, err := parseAuthority(again, 0)
		if err != nil || h2 != host || ip2 != ip || p2 != port {
			t.Fatalf("%q -> %q: %q %v %d %v", s, again, h2, ip2, p2, err)
		}
	})
}

// FuzzParseRule: ParseRule never panics, and a rule it accepts prints
// back to itself.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"api.github.com", "*.example.com:8443 GET", "[::1]:443", "::1", "10.0.0.1:1,2,3 POST PUT", "a:", "[::1]:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		r2, err := ParseRule(r.String())
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("%q -> %q -> %+v %v", s, r.String(), r2, err)
		}
	})
}

// deadResolver fails every lookup, so fuzzed requests never dial.
type deadResolver struct{}

func (deadResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("no")
}

// FuzzRequest: whatever request head a client sends, the proxy's handler
// answers without panicking, and a refusal never echoes a secret.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		"GET http://a.example.com/ HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
		"CONNECT a.example.com:443 HTTP/1.1\r\nHost: a.example.com:443\r\n\r\n",
		"POST http://[::1]:80/x HTTP/1.1\r\nHost: x\r\nAuthorization: agentsmith-placeholder-X\r\n\r\n",
		"GET http://secret.example.com/ HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer agentsmith-placeholder-X\r\n\r\n",
		"CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\nHost: z\r\n\r\n",
	} {
		f.Add(s)
	}
	const secret = "ghp_fuzzsecret"
	var refused []Refusal
	p := &Proxy{
		Policy: Policy{
			Allow:  []Rule{{Host: "*.example.com"}, {Host: "::1", Methods: []string{"GET"}}, {Host: "secret.example.com"}},
			Inject: []Inject{{Host: "secret.example.com", Header: "Authorization", Placeholder: "agentsmith-placeholder-X", Value: secret}},
		},
		Resolver: deadResolver{},
		Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("no dial in fuzzing")
		},
		OnRefuse: func(r Refusal) { refused = append(refused, r) },
	}
	ca, err := NewCA()
	if err != nil {
		f.Fatal(err)
	}
	p.CA = ca
	if err := p.init(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		refused = refused[:0]
		w := httptest.NewRecorder()
		p.serveOuter(w, req)
		if strings.Contains(w.Body.String(), secret) {
			t.Fatalf("response holds the secret: %q", w.Body.String())
		}
		for _, r := range refused {
			if strings.Contains(r.String(), secret) {
				t.Fatalf("refusal holds the secret: %v", r)
			}
		}
	})
}
