package netproxy

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// echo serves lines back to the sender until the listener closes.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(l)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, msg string, within time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(within))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	l, err := r.ReadString('\n')
	return strings.TrimSpace(l), err
}

// A cut drops the open connection and refuses new ones; Restore accepts
// on the same address again.
func TestCutRefusesAndDropsThenRestore(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "one", 5*time.Second); err != nil || got != "one" {
		t.Fatalf("through the open proxy: %q, %v", got, err)
	}
	p.Cut()
	if _, err := roundTrip(c, r, "two", 5*time.Second); err == nil {
		t.Error("the open connection still works after the cut")
	}
	if c2, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c2.Close()
		t.Error("a new connection was accepted during the cut")
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("after restore: %v", err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, bufio.NewReader(c3), "three", 5*time.Second); err != nil || got != "three" {
		t.Fatalf("after restore: %q, %v", got, err)
	}
}

// A black hole holds bytes (the peer times out, nothing is closed) and
// lets them flow on when restored.
func TestBlackholeHoldsThenFlows(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	p.Blackhole()
	if _, err := roundTrip(c, r, "held", 300*time.Millisecond); err == nil {
		t.Fatal("an answer came through the black hole")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("black hole: %v, want a timeout", err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if l, err := r.ReadString('\n'); err != nil || strings.TrimSpace(l) != "held" {
		t.Fatalf("after restore: %q, %v", l, err)
	}
}

// Latency delays each chunk by what the function returns.
func TestLatencyPerChunk(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetLatency(func() time.Duration { return 200 * time.Millisecond })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if got, err := roundTrip(c, bufio.NewReader(c), "slow", 5*time.Second); err != nil || got != "slow" {
		t.Fatalf("%q, %v", got, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("round trip took %s, want at least the 200 ms latency", d)
	}
}
