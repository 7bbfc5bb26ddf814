package statuspage

import (
	"net"
	"net/http"
	"strings"
)

// AllowHosts refuses, with 421 Misdirected Request and before next sees
// it, a request whose Host header names this listener by a name it does
// not know: DNS rebinding makes a browser send a page of the attacker's
// (rebind.attacker.example) to 127.0.0.1, where it would be same-origin
// with its own site and could read the answers and press the buttons.
// Allowed are "localhost", every IP literal (an IP has no DNS to rebind,
// and Prometheus scrapes a pod by its IP) and names (lower case, no port),
// each with any port. Nothing else is answered, so no cookie is ever set
// for another name.
func AllowHosts(names []string, next http.Handler) http.Handler {
	allowed := map[string]bool{"localhost": true}
	for _, n := range names {
		allowed[strings.ToLower(n)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(allowed, r.Host) {
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "421 misdirected request: this Host is not the admin listener's (status.hosts lists the names it answers to)",
				http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header hostport (host, host:port,
// [v6] or [v6]:port) names an IP or an allowed name.
func hostAllowed(allowed map[string]bool, hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil {
		return !strings.Contains(host, "%") // no IPv6 zone: never a Host a browser sends
	}
	return allowed[strings.ToLower(host)]
}
