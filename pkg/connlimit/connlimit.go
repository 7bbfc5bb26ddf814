// Package connlimit caps the connections a listener keeps open, in total
// and per source address, so one host opening thousands of slow
// connections cannot exhaust the process's file descriptors (~20k slow
// connections from one host would make /readyz and tracker calls fail
// with "too many open files"). A connection over a cap is closed as soon
// as it is accepted, never queued: the kernel's backlog is not ours to
// fill, and a refused client learns it at once.
package connlimit

import (
	"net"
	"sync"
)

// Reason says which cap refused a connection.
type Reason string

// The caps a connection can run into.
const (
	ReasonTotal      Reason = "total"
	ReasonPerAddress Reason = "per_address"
)

// Config sets the caps; a cap of 0 or less is no cap.
type Config struct {
	// Max is the number of connections open at once.
	Max int
	// MaxPerAddr is the number open at once from one source IP (the port
	// is ignored: one host, many ports; an IPv6 source counts by its /64,
	// which one host holds whole).
	MaxPerAddr int
	// Refused, when set, learns every refused connection (metrics). It
	// runs on the accept path: it must not block.
	Refused func(Reason)
}

// Listener wraps a net.Listener with the caps of Config.
type Listener struct {
	net.Listener
	cfg Config

	mu     sync.Mutex
	total  int
	perKey map[string]int
}

// Wrap returns l with cfg's caps.
func Wrap(l net.Listener, cfg Config) *Listener {
	return &Listener{Listener: l, cfg: cfg, perKey: map[string]int{}}
}

// Accept returns the next connection within the caps, closing the ones
// over them in the meantime. Errors are the wrapped listener's.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := sourceKey(c.RemoteAddr())
		if reason, ok := l.admit(key); !ok {
			_ = c.Close()
			if l.cfg.Refused != nil {
				l.cfg.Refused(reason)
			}
			continue
		}
		return &conn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

// Open reports the connections open now, in total and from the source
// address of addr.
func (l *Listener) Open(addr net.Addr) (total, fromAddr int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.perKey[sourceKey(addr)]
}

func (l *Listener) admit(key string) (Reason, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Max > 0 && l.total >= l.cfg.Max {
		return ReasonTotal, false
	}
	if l.cfg.MaxPerAddr > 0 && l.perKey[key] >= l.cfg.MaxPerAddr {
		return ReasonPerAddress, false
	}
	l.total++
	l.perKey[key]++
	return "", true
}

func (l *Listener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perKey[key]--; l.perKey[key] <= 0 {
		delete(l.perKey, key)
	}
}

// sourceKey is the IP of addr, or the whole address when it has no port
// (unix sockets, test pipes).
func sourceKey(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	if ta, ok := addr.(*net.TCPAddr); ok {
		if ta.IP.To4() == nil && len(ta.IP) == net.IPv6len {
			// One IPv6 host holds a whole /64: count the prefix.
			return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
		}
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// conn gives its slot back on its first Close.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
