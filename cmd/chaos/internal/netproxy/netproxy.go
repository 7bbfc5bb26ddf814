// Package netproxy is the TCP proxy the chaos harness puts between each
// replica and what it talks to (Redis, the tracker), so it can make the
// network fail the ways kill -9 does not show: a cut (connections refused,
// open ones dropped), a black hole (bytes stop flowing, nothing is closed,
// as when packets are dropped), added latency per chunk (a Redis command,
// an HTTP request), and flapping (cut and restore in turn, driven by the
// caller). It forwards bytes and knows nothing of the protocols.
package netproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does with traffic.
type Mode int

const (
	// Open forwards everything (with the configured latency).
	Open Mode = iota
	// Cut refuses new connections and closes the open ones.
	Cut
	// Blackhole accepts connections and holds every byte until the mode
	// changes: a peer sees timeouts, not errors.
	Blackhole
)

func (m Mode) String() string {
	switch m {
	case Cut:
		return "cut"
	case Blackhole:
		return "blackhole"
	default:
		return "open"
	}
}

// Proxy forwards connections from its listen address to Target.
type Proxy struct {
	target string

	mu      sync.Mutex
	cond    *sync.Cond // signalled when mode changes or the proxy closes
	addr    string     // fixed after New: a cut closes the listener, Restore listens again here
	ln      net.Listener
	mode    Mode
	latency func() time.Duration
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// New listens on a free loopback port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netproxy: listen: %w", err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's address ("127.0.0.1:port"); it does not change.
func (p *Proxy) Addr() string { return p.addr }

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetLatency delays every chunk read from the client by f() before it is
// forwarded (nil: none). Redis clients send one command per chunk unless
// they pipeline, so this is latency per command.
func (p *Proxy) SetLatency(f func() time.Duration) {
	p.mu.Lock()
	p.latency = f
	p.mu.Unlock()
}

// Cut refuses new connections (the listener is closed: connection refused)
// and closes every open one.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.mode = Cut
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
}

// Blackhole stops forwarding bytes without closing anything.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil && !p.closed {
		_ = p.listenLocked()
	}
	p.mode = Blackhole
	p.cond.Broadcast()
}

// Restore forwards again: after a cut it listens on the same address
// again; bytes a black hole held flow on.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("netproxy: closed")
	}
	p.mode = Open
	p.cond.Broadcast()
	if p.ln == nil {
		return p.listenLocked()
	}
	return nil
}

// listenLocked listens on p.addr again. The port was ours a moment ago;
// a retry covers the kernel not having released it yet.
func (p *Proxy) listenLocked() error {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		time.Sleep(20 * time.Millisecond) // re-binding a port just closed
	}
	return fmt.Errorf("netproxy: listen again on %s: %w", p.addr, err)
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}

// serve accepts on ln; the caller holds p.mu or owns p exclusively.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Cut or Close
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.handle(c) }()
		}
	}()
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) handle(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		_ = client.Close()
		_ = server.Close()
		return
	}
	defer p.untrack(client, server)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client, true); done <- struct{}{} }()
	go func() { p.pipe(client, server, false); done <- struct{}{} }()
	<-done // either side ended: close both (the deferred untrack)
}

// pipe copies src to dst chunk by chunk, holding each chunk while the
// proxy is a black hole and delaying it by the latency if delay is set.
func (p *Proxy) pipe(dst, src net.Conn, delay bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass(delay) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: handle closes both sides
		}
	}
}

// pass waits out the latency and a black hole; false means the chunk must
// be dropped (the proxy was cut or closed meanwhile).
func (p *Proxy) pass(delay bool) bool {
	p.mu.Lock()
	lat := p.latency
	p.mu.Unlock()
	if delay && lat != nil {
		if d := lat(); d > 0 {
			time.Sleep(d) // the injected latency itself
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == Blackhole && !p.closed {
		p.cond.Wait()
	}
	return p.mode == Open && !p.closed
}
