package sandbox

import (
	"io"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// loUp brings the namespace's loopback interface up: a new network
// namespace has only lo, and down.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// listenProxy listens on 127.0.0.1:port, and on [::1]:port where the
// namespace has IPv6, and bridges every connection to ProxySocket. The
// listeners live as long as the init.
func listenProxy(port int) error {
	l4, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	go serveProxy(l4)
	if l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		go serveProxy(l6)
	}
	return nil
}

func serveProxy(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		go bridge(c)
	}
}

// bridge copies between c and a new connection to ProxySocket until both
// directions are done, passing half-closes on.
func bridge(c net.Conn) {
	defer c.Close()
	u, err := net.Dial("unix", ProxySocket)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(u, c)
		_ = u.(*net.UnixConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, u)
	_ = c.(*net.TCPConn).CloseWrite()
	<-done
}
