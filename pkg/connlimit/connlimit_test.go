package connlimit

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
)

// serve accepts from l until it is closed, holding every connection open,
// and returns the held connections' count.
func serve(t *testing.T, l net.Listener) func() int {
	t.Helper()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return len(held) }
}

// dial opens n connections from the loopback address src and reports how
// many the server closed at once (a read ends with EOF or a reset).
func dial(t *testing.T, addr, src string, n int) (conns []net.Conn, closed func() int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	var mu sync.Mutex
	count := 0
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", src, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		conns = append(conns, c)
		go func() {
			_, err := c.Read(make([]byte, 1))
			if err != nil && !errors.Is(err, net.ErrClosed) {
				mu.Lock()
				count++
				mu.Unlock()
			}
		}()
	}
	return conns, func() int { mu.Lock(); defer mu.Unlock(); return count }
}

// 200 connections from one address with a per-address cap of 50: 50 are
// held, 150 closed at once; another address still gets in; closing a held
// connection frees its slot.
func TestPerAddressCap(t *testing.T) {
	t.Parallel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var rmu sync.Mutex
	refused := map[Reason]int{}
	l := Wrap(raw, Config{Max: 1000, MaxPerAddr: 50, Refused: func(r Reason) { rmu.Lock(); refused[r]++; rmu.Unlock() }})
	held := serve(t, l)
	conns, closed := dial(t, raw.Addr().String(), "127.0.0.1", 200)
	eventually.Wait(t, 10*time.Second, "150 connections refused, 50 held", func() bool { return closed() == 150 && held() == 50 })
	rmu.Lock()
	if refused[ReasonPerAddress] != 150 || refused[ReasonTotal] != 0 {
		t.Errorf("refused = %v, want 150 per_address", refused)
	}
	rmu.Unlock()
	if total, from := l.Open(conns[0].LocalAddr()); total != 50 || from != 50 {
		t.Errorf("open = %d total, %d from 127.0.0.1; want 50, 50", total, from)
	}

	// Another host is not affected by the first one's cap.
	_, closed2 := dial(t, raw.Addr().String(), "127.0.0.2", 10)
	eventually.Wait(t, 10*time.Second, "10 connections from 127.0.0.2 held", func() bool { return held() == 60 })
	if closed2() != 0 {
		t.Errorf("%d connections from 127.0.0.2 refused", closed2())
	}
}

// A connection the server closes gives its slot back once, however often
// Close is called.
func TestSlotFreedOnClose(t *testing.T) {
	t.Parallel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Wrap(raw, Config{MaxPerAddr: 1})
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// Echo one byte, then close twice.
			b := make([]byte, 1)
			_, _ = io.ReadFull(c, b)
			_, _ = c.Write(b)
			_ = c.Close()
			_ = c.Close()
		}
	}()
	for i := range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatalf("connection %d: refused after the previous one closed: %v", i, err)
		}
		_ = c.Close()
		eventually.Wait(t, 5*time.Second, "slot released", func() bool { total, _ := l.Open(c.LocalAddr()); return total == 0 })
	}
}

// The total cap holds across addresses.
func TestTotalCap(t *testing.T) {
	t.Parallel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var rmu sync.Mutex
	refused := map[Reason]int{}
	l := Wrap(raw, Config{Max: 30, MaxPerAddr: 20, Refused: func(r Reason) { rmu.Lock(); refused[r]++; rmu.Unlock() }})
	held := serve(t, l)
	_, c1 := dial(t, raw.Addr().String(), "127.0.0.1", 20)
	eventually.Wait(t, 10*time.Second, "20 held", func() bool { return held() == 20 })
	_, c2 := dial(t, raw.Addr().String(), "127.0.0.3", 20)
	eventually.Wait(t, 10*time.Second, "30 held, 10 refused", func() bool { return held() == 30 && c1()+c2() == 10 })
	rmu.Lock()
	defer rmu.Unlock()
	if refused[ReasonTotal] != 10 {
		t.Errorf("refused = %v, want 10 total", refused)
	}
}

func TestSourceKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 2}, "10.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 3}, "2001:db8:1:2::/64"},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, "/tmp/s"},
		{nil, ""},
	} {
		if got := sourceKey(c.addr); got != c.want {
			t.Errorf("sourceKey(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}
