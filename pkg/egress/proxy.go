package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the Proxy's bounds; a zero field takes these.
const (
	// DefaultDialTimeout bounds resolving and dialling an upstream.
	DefaultDialTimeout = 10 * time.Second
	// DefaultMaxConns bounds the client connections open at once; one
	// over it is answered 503 and closed at once, never queued.
	DefaultMaxConns = 256
	// DefaultMaxHeaderBytes bounds a request's header block.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxResponseHeaderBytes bounds an upstream's header block.
	DefaultMaxResponseHeaderBytes = 1 << 20
	// DefaultReadHeaderTimeout bounds reading a request's header block
	// (slow-loris) and a client's TLS handshake.
	DefaultReadHeaderTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection (client or
	// upstream) idle this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultTunnelIdleTimeout closes a CONNECT tunnel with no bytes in
	// either direction this long. Generous: a git fetch may think quietly.
	DefaultTunnelIdleTimeout = 10 * time.Minute
	// DefaultUpstreamHeaderTimeout bounds the wait for an upstream's
	// response headers; model APIs answering a long request may think
	// for minutes before the first byte.
	DefaultUpstreamHeaderTimeout = 10 * time.Minute
)

// Resolver is what the proxy resolves names with; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Proxy is the egress proxy of one run. Set its fields, then call Serve;
// fields must not change after.
type Proxy struct {
	Policy Policy
	// Resolver resolves names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to an address the proxy has checked ("ip:port",
	// never a name); nil is a net.Dialer. Tests point it elsewhere.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnRefuse, when set, hears each refused connection or request once
	// (the daemon logs it, counts it, and names it in the failure
	// comment). It runs on the request's goroutine: it must not block
	// long.
	OnRefuse func(Refusal)
	// CA intercepts TLS to hosts with Methods or an Inject; nil turns
	// interception off: such hosts are then http:// only, and Serve
	// refuses a Policy with Inject.
	CA *CA
	// UpstreamRoots verifies upstream TLS when intercepting; nil is the
	// system roots.
	UpstreamRoots *x509.CertPool

	// Bounds; zero takes the Default of the same name.
	DialTimeout           time.Duration
	ReadHeaderTimeout     time.Duration
	IdleTimeout           time.Duration
	TunnelIdleTimeout     time.Duration
	UpstreamHeaderTimeout time.Duration
	MaxConns              int
	MaxHeaderBytes        int

	initOnce  sync.Once
	initErr   error
	srv       *http.Server
	transport *http.Transport
	rp        *httputil.ReverseProxy
	slots     chan struct{}

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // client and tunnel-upstream conns
	inner  map[*http.Server]struct{}
}

// targetKey carries a request's checked target to the Transport's dial.
type targetKey struct{}

// target is where one request or tunnel goes: the name, and the
// addresses that passed the checks (the only ones ever dialled).
type target struct {
	host  string
	port  int
	addrs []netip.Addr
}

var discardLog = log.New(io.Discard, "", 0)

func (p *Proxy) init() error {
	p.initOnce.Do(func() {
		if err := p.Policy.Validate(); err != nil {
			p.initErr = err
			return
		}
		if p.CA == nil && len(p.Policy.Inject) > 0 {
			p.initErr = errors.New("egress: Policy.Inject needs interception, and Proxy.CA is nil")
			return
		}
		p.conns = map[net.Conn]struct{}{}
		p.inner = map[*http.Server]struct{}{}
		p.slots = make(chan struct{}, orDefault(p.MaxConns, DefaultMaxConns))
		p.transport = &http.Transport{
			Proxy:                  nil,
			DialContext:            p.dialTarget,
			TLSClientConfig:        &tls.Config{RootCAs: p.UpstreamRoots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:    orDefault(p.DialTimeout, DefaultDialTimeout),
			ResponseHeaderTimeout:  orDefault(p.UpstreamHeaderTimeout, DefaultUpstreamHeaderTimeout),
			IdleConnTimeout:        orDefault(p.IdleTimeout, DefaultIdleTimeout),
			MaxIdleConnsPerHost:    8,
			MaxResponseHeaderBytes: DefaultMaxResponseHeaderBytes,
			ExpectContinueTimeout:  time.Second,
		}
		p.rp = &httputil.ReverseProxy{
			Rewrite:       p.rewrite,
			Transport:     p.transport,
			FlushInterval: -1, // stream: tools show progress, SSE must flow
			ErrorLog:      discardLog,
			ErrorHandler:  p.upstreamError,
		}
		p.srv = p.newServer(http.HandlerFunc(p.serveOuter))
	})
	return p.initErr
}

func (p *Proxy) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: orDefault(p.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       orDefault(p.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    orDefault(p.MaxHeaderBytes, DefaultMaxHeaderBytes),
		ErrorLog:          discardLog,
	}
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Serve answers HTTP/1.1 proxy requests on ln until ln or the Proxy is
// closed; it returns nil then, and an error for a bad Policy or a
// failing listener. It may be called for several listeners.
func (p *Proxy) Serve(ln net.Listener) error {
	if err := p.init(); err != nil {
		return err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil
	}
	err := p.srv.Serve(&limitListener{Listener: ln, p: p})
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Close stops every Serve and closes every connection the proxy holds:
// clients, tunnels, intercepted sessions and idle upstreams. Handlers
// still running end as their connections fail.
func (p *Proxy) Close() error {
	if err := p.init(); err != nil {
		return nil
	}
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	inner := p.inner
	p.inner = map[*http.Server]struct{}{}
	p.mu.Unlock()
	err := p.srv.Close()
	for s := range inner {
		_ = s.Close()
	}
	for c := range conns {
		_ = c.Close()
	}
	p.transport.CloseIdleConnections()
	return err
}

// track holds c for Close; false (and c closed) when already closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// refuse reports r once and answers 403.
func (p *Proxy) refuse(w http.ResponseWriter, r Refusal) {
	if p.OnRefuse != nil {
		p.OnRefuse(r)
	}
	writeRefusal(w, r)
}

// serveOuter handles a request on a client connection: CONNECT or an
// absolute-form http:// request.
func (p *Proxy) serveOuter(w http.ResponseWriter, r *http.Request) {
	defer p.flushIfClosed()
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" || r.URL.User != nil || r.URL.Opaque != "" {
		writeError(w, http.StatusBadRequest, "this is a proxy: send absolute-form http:// requests or CONNECT")
		return
	}
	if r.URL.Scheme != "http" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("scheme %q: use CONNECT for https", r.URL.Scheme))
		return
	}
	host, ip, port, err := parseAuthority(r.URL.Host, 80)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad host: "+err.Error())
		return
	}
	g := p.Policy.match(host, ip, port)
	if !g.ok {
		p.refuse(w, refuseNotAllowed(host, port, r.Method, g.hostAllowed))
		return
	}
	if ref, ok := checkRequest(host, port, r, g); !ok {
		p.refuse(w, ref)
		return
	}
	for _, in := range p.Policy.injects(host) {
		for _, v := range r.Header.Values(in.Header) {
			if strings.Contains(v, in.Placeholder) {
				p.refuse(w, refuseOther(host, port, r.Method, "a secret is injected over https only",
					fmt.Sprintf("none in the config: use https://%s", hostPort(host, 443))))
				return
			}
		}
	}
	t, ok := p.resolveOrAnswer(w, r, host, ip, port, r.Method, g)
	if !ok {
		return
	}
	p.forward(w, r, t, "http")
}

// resolveOrAnswer resolves a request's target; where it cannot (502) or
// may not (the refusal) be reached, it answers the client and says so.
func (p *Proxy) resolveOrAnswer(w http.ResponseWriter, r *http.Request, host string, ip netip.Addr, port int, method string, g grant) (*target, bool) {
	t, ref, err := p.resolve(r.Context(), host, ip, port, method, g)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return nil, false
	}
	if ref != nil {
		p.refuse(w, *ref)
		return nil, false
	}
	return t, true
}

// checkRequest applies a grant's method rule and refuses a protocol
// upgrade on a host with methods (past 101 the stream is opaque).
func checkRequest(host string, port int, r *http.Request, g grant) (Refusal, bool) {
	if g.methods == nil {
		return Refusal{}, true
	}
	if !g.methods[r.Method] {
		return refuseMethod(host, port, r.Method, sortedMethods(g.methods)), false
	}
	if r.Header.Get("Upgrade") != "" {
		return refuseOther(host, port, r.Method, "protocol upgrade on a host with method rules",
			allowLine(Rule{Host: host, Ports: []int{port}}.String())+" (without methods)"), false
	}
	return Refusal{}, true
}

// serveConnect tunnels or intercepts a CONNECT.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	host, ip, port, err := parseAuthority(r.RequestURI, 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad CONNECT authority: "+err.Error())
		return
	}
	g := p.Policy.match(host, ip, port)
	if !g.ok {
		p.refuse(w, refuseNotAllowed(host, port, http.MethodConnect, g.hostAllowed))
		return
	}
	inj := p.Policy.injects(host)
	intercept := g.methods != nil || len(inj) > 0
	if intercept && p.CA == nil {
		p.refuse(w, refuseOther(host, port, http.MethodConnect,
			"interception is off, and this host has method rules (a tunnel's methods cannot be seen)",
			fmt.Sprintf("use http://%s, or %s (without methods)", hostPort(host, port),
				allowLine(Rule{Host: host, Ports: []int{port}}.String()))))
		return
	}
	t, ok := p.resolveOrAnswer(w, r, host, ip, port, http.MethodConnect, g)
	if !ok {
		return
	}
	if intercept {
		p.intercept(w, t, g, inj)
		return
	}
	up, err := p.dialAddrs(r.Context(), t)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	if !p.track(up) {
		writeError(w, http.StatusServiceUnavailable, "proxy closing")
		return
	}
	defer func() {
		_ = up.Close()
		p.untrack(up)
	}()
	client, buf, ok := hijack(w)
	if !ok {
		return
	}
	defer func() { _ = client.Close() }()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	splice(client, up, orDefault(p.TunnelIdleTimeout, DefaultTunnelIdleTimeout))
}

// hijack takes the client connection from the server, clearing the
// header deadline the server set.
func hijack(w http.ResponseWriter) (net.Conn, *bufio.ReadWriter, bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, http.StatusInternalServerError, "cannot take over the connection")
		return nil, nil, false
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		return nil, nil, false
	}
	_ = c.SetDeadline(time.Time{})
	return c, buf, true
}

// resolve finds host's addresses and checks every one: one bad address
// refuses the host (a name with one public and one private address is a
// rebinding trick, or a mistake worth hearing about).
func (p *Proxy) resolve(ctx context.Context, host string, ip netip.Addr, port int, method string, g grant) (*target, *Refusal, error) {
	var addrs []netip.Addr
	if ip.IsValid() {
		addrs = []netip.Addr{ip}
	} else {
		var res Resolver = net.DefaultResolver
		if p.Resolver != nil {
			res = p.Resolver
		}
		ctx, cancel := context.WithTimeout(ctx, orDefault(p.DialTimeout, DefaultDialTimeout))
		defer cancel()
		var err error
		addrs, err = res.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return nil, nil, fmt.Errorf("cannot resolve %s", host)
		}
	}
	for _, a := range addrs {
		if why, denied := checkAddr(a, p.Policy.Deny, g.byIP); why != "" {
			ref := refuseAddr(host, port, method, a.WithZone("").String(), why, denied)
			return nil, &ref, nil
		}
	}
	return &target{host: host, port: port, addrs: addrs}, nil, nil
}

// dialAddrs connects to the first of t's checked addresses that answers.
func (p *Proxy) dialAddrs(ctx context.Context, t *target) (net.Conn, error) {
	if p.isClosed() {
		return nil, errors.New("proxy closing")
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(p.DialTimeout, DefaultDialTimeout))
	defer cancel()
	dial := p.Dial
	if dial == nil {
		d := &net.Dialer{}
		dial = d.DialContext
	}
	var last error
	for _, a := range t.addrs {
		c, err := dial(ctx, "tcp", netip.AddrPortFrom(a.WithZone(""), uint16(t.port)).String())
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, fmt.Errorf("cannot reach %s: %v", hostPort(t.host, t.port), last)
}

// dialTarget is the Transport's dial: it connects only to the checked
// addresses the request carries, never resolving the name again.
func (p *Proxy) dialTarget(ctx context.Context, network, addr string) (net.Conn, error) {
	t, _ := ctx.Value(targetKey{}).(*target)
	if t == nil || addr != hostPort(t.host, t.port) {
		return nil, fmt.Errorf("egress: dial %s without a checked target", addr)
	}
	return p.dialAddrs(ctx, t)
}

// forward sends r to t over scheme through the ReverseProxy, which strips
// hop-by-hop headers (Connection and those it names, Proxy-Connection,
// Proxy-Authorization, Keep-Alive, TE, Trailer, Transfer-Encoding,
// Upgrade) and streams both bodies.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, t *target, scheme string) {
	ctx := context.WithValue(r.Context(), targetKey{}, t)
	r = r.WithContext(ctx)
	r.URL.Scheme = scheme
	p.rp.ServeHTTP(w, r)
}

// rewrite points the outgoing request at its checked target.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	t, _ := pr.In.Context().Value(targetKey{}).(*target)
	if t == nil {
		return // dialTarget refuses it
	}
	pr.Out.URL.Scheme = pr.In.URL.Scheme
	pr.Out.URL.Host = hostPort(t.host, t.port)
	pr.Out.Host = pr.In.Host
}

// upstreamError answers 502 for an upstream that failed. The message
// names the host and Go's error, which never holds header values (so
// never an injected secret).
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	host := r.URL.Host
	if t, _ := r.Context().Value(targetKey{}).(*target); t != nil {
		host = hostPort(t.host, t.port)
	}
	if errors.Is(err, context.Canceled) {
		return // the client went away
	}
	writeError(w, http.StatusBadGateway, fmt.Sprintf("upstream %s failed: %v", host, err))
}

// flushIfClosed drops idle upstream connections a handler returned to
// the pool after Close, so none outlives the Proxy.
func (p *Proxy) flushIfClosed() {
	if p.isClosed() {
		p.transport.CloseIdleConnections()
	}
}

// intercept terminates the client's TLS with a leaf for t.host signed by
// the CA, then serves the requests inside: each is checked for method
// and Host, gets its Inject, and goes to t's checked addresses over TLS
// verified against UpstreamRoots.
func (p *Proxy) intercept(w http.ResponseWriter, t *target, g grant, inj []Inject) {
	leaf, err := p.CA.leafFor(t.host)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	client, buf, ok := hijack(w)
	if !ok {
		return
	}
	defer func() { _ = client.Close() }()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var raw net.Conn = client
	if buf.Reader.Buffered() > 0 {
		raw = &prefixConn{Conn: client, r: io.MultiReader(buf.Reader, client)}
	}
	tc := tls.Server(raw, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	_ = tc.SetDeadline(time.Now().Add(orDefault(p.ReadHeaderTimeout, DefaultReadHeaderTimeout)))
	if err := tc.Handshake(); err != nil {
		return // the client does not trust the CA, or is not speaking TLS
	}
	_ = tc.SetDeadline(time.Time{})

	srv := p.newServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer p.flushIfClosed()
		p.serveIntercepted(w, r, t, g, inj)
	}))
	done := make(chan struct{})
	var once sync.Once
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			once.Do(func() { close(done) })
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.inner[srv] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.inner, srv)
		p.mu.Unlock()
	}()
	// Serve returns once the session ends, or at once if Close came
	// first (then the deferred close of client ends the session).
	_ = srv.Serve(&oneConnListener{c: tc, done: done, closed: make(chan struct{})})
}

// serveIntercepted handles one request inside an intercepted tunnel.
func (p *Proxy) serveIntercepted(w http.ResponseWriter, r *http.Request, t *target, g grant, inj []Inject) {
	if r.Method == http.MethodConnect || r.URL.IsAbs() {
		writeError(w, http.StatusBadRequest, "inside a tunnel send origin-form requests")
		return
	}
	h, _, port, err := parseAuthority(r.Host, t.port)
	if err != nil || h != t.host || port != t.port {
		p.refuse(w, refuseOther(t.host, t.port, r.Method,
			"the Host header names another host than the tunnel",
			"none: send each host's requests through a tunnel to that host"))
		return
	}
	if ref, ok := checkRequest(t.host, t.port, r, g); !ok {
		p.refuse(w, ref)
		return
	}
	for _, in := range inj {
		vals := r.Header.Values(in.Header)
		if len(vals) == 0 {
			continue
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = strings.ReplaceAll(v, in.Placeholder, in.Value)
		}
		r.Header[http.CanonicalHeaderKey(in.Header)] = out
	}
	p.forward(w, r, t, "https")
}

// splice copies both ways until both are done, an error, or idle
// passes with no byte in either direction.
func splice(a, b net.Conn, idle time.Duration) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		err := copyIdle(dst, src, idle, &last)
		if err == nil {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return // the other way may still have bytes to send
			}
		}
		_ = a.Close()
		_ = b.Close()
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}

// copyIdle copies src to dst; nil at EOF. It gives up once neither
// direction has moved a byte for idle (last is shared by both).
func copyIdle(dst, src net.Conn, idle time.Duration, last *atomic.Int64) error {
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			_ = dst.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idle {
				continue
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// prefixConn reads bytes the server had buffered before the handshake.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConnListener hands an http.Server one connection, then blocks until
// that connection ends or the listener is closed (Server.Close waits for
// Serve to return before it closes connections), so Serve returns when
// the session does.
type oneConnListener struct {
	c      net.Conn
	done   chan struct{}
	used   bool
	closed chan struct{}
	once   sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.used {
		l.used = true
		return l.c, nil
	}
	select {
	case <-l.done:
	case <-l.closed:
	}
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// limitListener caps the client connections open at once and tracks
// them for Close. A connection over the cap is answered 503 and closed
// at once, never queued: a pipeline opening hundreds of connections is
// broken or hostile, and its tools learn it at once.
type limitListener struct {
	net.Listener
	p *Proxy
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.p.slots <- struct{}{}:
		default:
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "+
				strconv.Itoa(len(tooMany))+"\r\n\r\n"+tooMany)
			_ = c.Close()
			continue
		}
		tc := &trackedConn{Conn: c, p: l.p}
		if !l.p.track(tc) {
			<-l.p.slots
			continue
		}
		return tc, nil
	}
}

const tooMany = "agentsmith egress: too many connections open through the proxy\n"

// trackedConn frees its slot and leaves the Proxy's set when closed.
type trackedConn struct {
	net.Conn
	p    *Proxy
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.p.untrack(c)
		<-c.p.slots
	})
	return err
}

// CloseWrite half-closes, so a tunnel passes a client's EOF on.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
