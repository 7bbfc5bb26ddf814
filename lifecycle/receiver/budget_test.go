package receiver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/membudget"
	"github.com/agentsmithd/agentsmithd/platforms/github"
)

// inFlight counts, across a listener's connections, the bytes the server
// has read from connections it has not answered yet: what it may be holding
// for senders it has not authenticated. Peak is the most at any moment.
type inFlight struct {
	mu   sync.Mutex
	held int64
	peak int64
}

func (f *inFlight) add(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held += n
	f.peak = max(f.peak, f.held)
}

func (f *inFlight) Peak() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}

type countingListener struct {
	net.Listener
	f *inFlight
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, f: l.f}, nil
}

// countingConn adds what the server reads to its inFlight until the server
// first writes (its answer), and takes it off then.
type countingConn struct {
	net.Conn
	f        *inFlight
	mu       sync.Mutex
	read     int64
	answered bool
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if !c.answered {
		c.read += int64(n)
		c.f.add(int64(n))
	}
	c.mu.Unlock()
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.settle()
	return c.Conn.Write(p)
}

func (c *countingConn) Close() error {
	c.settle()
	return c.Conn.Close()
}

func (c *countingConn) settle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.answered {
		c.answered = true
		c.f.add(-c.read)
	}
}

// TestUnauthenticatedBodiesShareOneBudget: many connections each send a
// body of nearly the largest size, unsigned and never finished (the last
// byte held back). However many there are, the receiver holds no more of
// their bytes than its body budget (plus each connection's read buffer):
// those that find no room are answered 503 with Retry-After instead of
// read. Once they are gone an honest delivery is claimed.
func TestUnauthenticatedBodiesShareOneBudget(t *testing.T) {
	// Bodies small enough to sit whole in a loopback socket's buffers, so
	// every byte sent is there for the server to read.
	const (
		bodySize = 16 << 10
		senders  = 16
		budget   = 4 * bodySize
		// What the HTTP server reads ahead of the handler per connection:
		// its bufio.Reader (4 KiB) and the request head.
		perConn = 8 << 10
	)
	b := membudget.New(budget)
	w := newHostileWorldWith(t, receiver.Config{MaxBody: bodySize, BodyTimeout: time.Minute,
		BodyBudget: b, BudgetWait: 200 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &inFlight{}
	srv := &http.Server{Handler: w.handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = srv.Serve(countingListener{Listener: ln, f: f}) }()
	t.Cleanup(func() { _ = srv.Close() })

	body := `{"action":"labeled","padding":"` + strings.Repeat("a", bodySize-40) + `"}`
	head := fmt.Sprintf("POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"%s: issues\r\n%s: sha256=00\r\nContent-Length: %d\r\n\r\n", github.HeaderEvent, github.HeaderSignature, len(body))
	var answered atomic.Int32
	var statuses sync.Map
	conns := make([]net.Conn, senders)
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { _ = c.Close() })
		if _, err := io.WriteString(c, head+body[:len(body)-1]); err != nil {
			t.Fatal(err)
		}
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				statuses.Store(i, resp)
				_ = resp.Body.Close()
			}
			answered.Add(1)
		}()
	}
	// Every sender is either held (its body read up to the missing byte)
	// or turned away; those held stay so until their connections close.
	eventually.Wait(t, 10*time.Second, "every hostile sender held or answered", func() bool {
		held := int(b.Used() / int64(len(body)))
		return int(answered.Load())+held >= senders || f.Peak() >= senders*int64(len(body))
	})
	t.Logf("peak in flight %d bytes (budget %d + %d connections × %d), budget peak %d, %d answered",
		f.Peak(), budget, senders, perConn, b.Peak(), answered.Load())
	if p := f.Peak(); p > budget+senders*perConn {
		t.Errorf("the receiver held %d bytes of unauthenticated bodies at once, over its budget %d (+%d read-ahead)",
			p, budget, senders*perConn)
	}
	if b.Peak() > budget {
		t.Errorf("budget peak %d over its limit %d", b.Peak(), budget)
	}
	statuses.Range(func(_, v any) bool {
		resp := v.(*http.Response)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a turned-away sender got %s, Retry-After %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
		}
		return true
	})

	for _, c := range conns {
		_ = c.Close()
	}
	eventually.Wait(t, 10*time.Second, "the budget to be free again", func() bool { return b.Used() == 0 })
	honest := delivery{body: issuePayload("labeled", "acme/app", 1, "agent-smith")}.request()
	honest.RequestURI = ""
	honest.URL.Scheme, honest.URL.Host = "http", ln.Addr().String()
	resp, err := http.DefaultClient.Do(honest)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("honest delivery after the hostile ones: %s, want 202", resp.Status)
	}
}

// A body sent without a length (chunked) grows its buffer, and its
// reservation, as it arrives: one larger than a chunk is claimed, one over
// MaxBody is 413, and both leave the budget as they found it.
func TestChunkedBodiesAreReservedAsTheyGrow(t *testing.T) {
	b := membudget.New(1 << 20)
	w := newHostileWorldWith(t, receiver.Config{MaxBody: maxBody, BodyBudget: b})
	var payload map[string]any
	if err := json.Unmarshal(issuePayload("labeled", "acme/app", 1, "agent-smith"), &payload); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pad  int
		want int
	}{{48 << 10, http.StatusAccepted}, {maxBody, http.StatusRequestEntityTooLarge}} {
		payload["padding"] = strings.Repeat("a", c.pad)
		body, _ := json.Marshal(payload)
		r := delivery{body: body}.request()
		r.ContentLength = -1 // as a chunked request arrives
		rec := httptest.NewRecorder()
		w.handler.ServeHTTP(rec, r)
		if rec.Code != c.want {
			t.Errorf("%d-byte chunked body: %d %s, want %d", len(body), rec.Code, rec.Body.String(), c.want)
		}
		if b.Used() != 0 {
			t.Errorf("%d bytes still reserved after the delivery", b.Used())
		}
	}
	if p := b.Peak(); p < 48<<10 || p > 3*maxBody/2 {
		t.Errorf("budget peak %d, want the body's size, at most one and a half MaxBody (%d) while it grows", p, maxBody)
	}
}
