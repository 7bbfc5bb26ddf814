// Package egress is the one way out of a run's network namespace: an
// HTTP/1.1 forward proxy the daemon runs outside the sandbox, reached
// from inside through a unix socket bridged to 127.0.0.1:3128
// (HTTP_PROXY/HTTPS_PROXY). Pipelines run coding agents on ticket text
// anyone can write, so every request through it is treated as hostile.
//
// What the proxy stops:
//   - any host that no Rule in Policy.Allow names (CONNECT tunnels and
//     absolute-form http:// requests alike), on any port the rule does
//     not list (80 and 443 when it lists none);
//   - names that resolve to loopback, private, link-local (the cloud
//     metadata address 169.254.169.254), CGNAT, multicast, broadcast,
//     reserved or unspecified addresses, their IPv4-mapped and embedded
//     IPv6 forms, and the ranges of Policy.Deny — whatever the name: only
//     a rule naming the IP literal itself reaches such an address (never
//     one in Policy.Deny). The proxy dials the address it checked, not
//     the name again, so a DNS answer that changes between check and dial
//     (rebinding) gains nothing;
//   - methods a Rule does not list, over http:// per request and over
//     https:// by intercepting the TLS (a blind tunnel's methods cannot be
//     seen, so a host with Methods is never tunnelled);
//   - a secret leaving the daemon except in one header to one host:
//     Inject swaps a placeholder the pipeline holds for the real value in
//     intercepted https requests only.
//
// What it does not stop, and why:
//   - a program that ignores the proxy variables has no route out at all;
//     that is the namespace's job, not this package's;
//   - responses pass through unmodified: nothing is filtered or scanned,
//     and a server that echoes request headers back would show the
//     injected secret to the pipeline (only hosts trusted with the secret
//     should get an Inject);
//   - what an allowed host does with the data sent to it: an allowed host
//     that accepts uploads (a gist, a paste site) is a way to exfiltrate
//     the workspace, so allow narrowly and restrict Methods;
//   - inside a blind CONNECT tunnel the bytes are opaque: the client may
//     speak anything to the allowed host and port. The same holds after a
//     protocol upgrade (WebSocket) on a host without Methods; on a host
//     with Methods an upgrade is refused;
//   - an intercepted host must speak TLS on the CONNECT port, and
//     interception speaks HTTP/1.1 only, to the client and upstream.
//
// An Inject does not allow its host: a Rule must too.
//
// Refused requests get 403 with a short plain-text body naming the host
// and the config line that would allow it (the pipeline's tools print it
// into the run's log), and Proxy.OnRefuse hears each refusal once.
package egress
