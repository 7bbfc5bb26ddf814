package egress

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Refusal describes one refused connection or request. None of its
// fields ever holds an injected secret: they are built from the host,
// port, method and resolved address alone, never from headers.
type Refusal struct {
	Host   string // as normalized: lower case, IP literals canonical
	Port   int
	Method string // "CONNECT" for a tunnel, else the request's method
	Addr   string // the refused address, for address refusals
	Reason string // short, e.g. "not in sandbox.network.allow"
	fix    string
}

// Fix is the line an operator adds to the config to allow what was
// refused, or, when no line can (an address only an IP rule reaches, a
// range the daemon denies), says so.
func (r Refusal) Fix() string { return r.fix }

// String is the refusal as one line, for logs.
func (r Refusal) String() string {
	s := fmt.Sprintf("%s %s: %s", r.Method, hostPort(r.Host, r.Port), r.Reason)
	if r.fix != "" {
		s += "; " + r.fix
	}
	return s
}

// hostPort joins host and port, bracketing IPv6.
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// allowLine is the config line allowing rule.
func allowLine(rule string) string {
	return fmt.Sprintf("sandbox.network.allow: [%q]", rule)
}

func refuseNotAllowed(host string, port int, method string, hostAllowed bool) Refusal {
	reason := "not in sandbox.network.allow"
	if hostAllowed {
		reason = fmt.Sprintf("port %d not in sandbox.network.allow for this host", port)
	}
	return Refusal{Host: host, Port: port, Method: method, Reason: reason,
		fix: allowLine(Rule{Host: host, Ports: []int{port}}.String())}
}

func refuseMethod(host string, port int, method string, allowed []string) Refusal {
	ms := append(append([]string(nil), allowed...), method)
	return Refusal{Host: host, Port: port, Method: method,
		Reason: fmt.Sprintf("method %s not allowed", method),
		fix:    allowLine(Rule{Host: host, Ports: []int{port}, Methods: ms}.String())}
}

func refuseAddr(host string, port int, method, addr, why string, denied bool) Refusal {
	fix := fmt.Sprintf("only a rule naming the IP literal reaches %s, and the pipeline must then use the address, not the name: %s", addr,
		allowLine(Rule{Host: addr, Ports: []int{port}}.String()))
	if denied {
		fix = "none: the daemon denies this range whatever the config says"
	}
	return Refusal{Host: host, Port: port, Method: method, Addr: addr, Reason: why, fix: fix}
}

func refuseOther(host string, port int, method, reason, fix string) Refusal {
	return Refusal{Host: host, Port: port, Method: method, Reason: reason, fix: fix}
}

// writeRefusal answers 403 with a short plain-text body: what was
// refused, why, and the fix line. A pipeline's tools print bodies of
// failed requests, so the fix reaches the run's log and its author.
func writeRefusal(w http.ResponseWriter, r Refusal) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusForbidden)
	var b strings.Builder
	fmt.Fprintf(&b, "agentsmith egress: refused %s %s: %s\n", r.Method, hostPort(r.Host, r.Port), r.Reason)
	if r.fix != "" {
		fmt.Fprintf(&b, "fix: %s\n", r.fix)
	}
	_, _ = w.Write([]byte(b.String()))
}

// writeError answers a non-refusal failure (400, 502) in plain text.
func writeError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte("agentsmith egress: " + msg + "\n"))
}
