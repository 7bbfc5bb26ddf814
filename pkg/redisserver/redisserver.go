// Package redisserver runs real redis-server child processes: on a free
// loopback port, persistence off, killed with the parent. The offline demo,
// the chaos run and the benchmark start their Redis here, and so does the
// test harness internal/redistest, which adds the testing.TB wrapper; production
// code imports this package, never the test helper.
//
// A server never uses 127.0.0.1:6379: a developer's own Redis stays untouched.
package redisserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultBinary is where redis-server is looked for when it is not in PATH.
const DefaultBinary = "/usr/bin/redis-server"

// StartTimeout bounds how long Start waits for the new server to
// answer PING when the caller's context has no earlier deadline.
const StartTimeout = 10 * time.Second

// startAttempts is how often Start picks a new port when the server
// exits at once (another process grabbed the port between pick and bind).
const startAttempts = 3

// dbFile is the snapshot file in the server's working directory; aofFiles
// are where Redis 7 (a directory) and Redis 6 (a file) keep the append-only
// file there by default.
const dbFile = "redisserver.rdb"

var aofFiles = []string{"appendonlydir", "appendonly.aof"}

// ErrNoBinary is returned when no redis-server executable can be found.
var ErrNoBinary = errors.New("redis-server not found in PATH or " + DefaultBinary)

// FindBinary returns the redis-server to run: the one in PATH, else
// DefaultBinary, else ErrNoBinary.
func FindBinary() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if st, err := os.Stat(DefaultBinary); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
		return DefaultBinary, nil
	}
	return "", ErrNoBinary
}

// Process is one redis-server child process bound to 127.0.0.1 with
// persistence off unless its Spec turns AOF on (Crash restarts from it) or
// a test snapshots it on purpose (Snapshot, RestartFrom). It keeps its port across Restart so clients that hold its
// address reconnect to the new, empty server.
type Process struct {
	bin     string
	dir     string
	ownsDir bool // dir was created by Start and is removed by Stop
	port    int

	spec Spec

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	out  *syncBuffer
}

// Start starts redis-server (bin, or FindBinary when bin is "") on a
// free port with its working directory dir (a new temporary directory when
// dir is ""), and returns once the server answers PING. ctx bounds the
// start-up only (at most StartTimeout); the server then runs until Stop.
func Start(ctx context.Context, bin, dir string) (*Process, error) {
	return StartSpec(ctx, bin, dir, Spec{})
}

// Spec is what a server needs beyond the defaults: extra arguments, TLS,
// credentials, or sentinel mode.
type Spec struct {
	// Args are appended to the redis-server arguments ("--requirepass", "x").
	Args []string
	// TLS, when set, makes the server listen with TLS only (its port is the
	// tls-port; Args must name --tls-cert-file, --tls-key-file and
	// --tls-ca-cert-file) and is how the harness pings it.
	TLS *tls.Config
	// Username and Password are what the harness pings with.
	Username, Password string
	// SentinelConf, when set, runs a sentinel instead of a data server: it
	// is written to sentinel.conf (port and bind are added) and the server
	// is started with --sentinel. Sentinel rewrites the file as it learns.
	SentinelConf string
}

// StartSpec is Start for a server described by spec.
func StartSpec(ctx context.Context, bin, dir string, spec Spec) (*Process, error) {
	if bin == "" {
		var err error
		if bin, err = FindBinary(); err != nil {
			return nil, fmt.Errorf("redisserver: %w", err)
		}
	}
	p := &Process{bin: bin, dir: dir, spec: spec}
	if dir == "" {
		d, err := os.MkdirTemp("", "redisserver-")
		if err != nil {
			return nil, fmt.Errorf("redisserver: temp dir: %w", err)
		}
		p.dir, p.ownsDir = d, true
	}
	var lastErr error
	for range startAttempts {
		port, err := FreePort()
		if err != nil {
			return nil, fmt.Errorf("redisserver: pick port: %w", err)
		}
		p.port = port
		if lastErr = p.startEmpty(ctx); lastErr == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	if p.ownsDir {
		_ = os.RemoveAll(p.dir)
	}
	return nil, lastErr
}

// Addr is the server's "127.0.0.1:port".
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Stop kills the server (SIGKILL: nothing needs saving), waits for it to
// exit, and removes the directory Start created, if it made one.
// Stopping a stopped process is a no-op.
func (p *Process) Stop() error {
	if err := p.Kill(); err != nil {
		return err
	}
	if p.ownsDir {
		if err := os.RemoveAll(p.dir); err != nil {
			return fmt.Errorf("redisserver: remove %s: %w", p.dir, err)
		}
	}
	return nil
}

// start launches the server on p.port and waits for PING.
func (p *Process) start(ctx context.Context, extra ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("redisserver: server on %s already running", p.Addr())
	}
	out := &syncBuffer{}
	args, err := p.args()
	if err != nil {
		return err
	}
	args = append(args, extra...)
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.dir
	cmd.Stdout = out
	cmd.Stderr = out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start %s: %w", p.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if err := waitPing(ctx, p.ClientOptions(), done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redisserver: %s on %s: %w; server output:\n%s", p.bin, p.Addr(), err, out.String())
	}
	p.cmd, p.done, p.out = cmd, done, out
	return nil
}

// args is the command line for p.spec.
func (p *Process) args() ([]string, error) {
	port := strconv.Itoa(p.port)
	if p.spec.SentinelConf != "" {
		conf := filepath.Join(p.dir, "sentinel.conf")
		body := "port " + port + "\nbind 127.0.0.1\ndir " + p.dir + "\n" + p.spec.SentinelConf
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("redisserver: write sentinel config: %w", err)
		}
		return []string{conf, "--sentinel"}, nil
	}
	ports := []string{"--port", port}
	if p.spec.TLS != nil {
		ports = []string{"--port", "0", "--tls-port", port}
	}
	return append(append(ports,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", p.dir,
		"--dbfilename", dbFile,
	), p.spec.Args...), nil
}

// Restart starts the server again on the same port with no data, killing it
// first if it still runs: the "Redis lost everything" scenario. Clients that
// hold Addr reconnect to the new, empty server. ctx bounds the start-up.
func (p *Process) Restart(ctx context.Context) error {
	if err := p.Kill(); err != nil {
		return err
	}
	return p.startEmpty(ctx)
}

// startEmpty starts the server with nothing to load: Restart promises an
// empty server, so a snapshot a test wrote on purpose (SAVE, Snapshot) or
// an append-only file (Spec.Args with --appendonly yes) must not be
// loaded. --save "" writes no snapshot by itself.
func (p *Process) startEmpty(ctx context.Context) error {
	if err := p.removeData(); err != nil {
		return err
	}
	return p.start(ctx)
}

func (p *Process) removeData() error {
	if err := os.Remove(filepath.Join(p.dir, dbFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("redisserver: remove old snapshot: %w", err)
	}
	for _, f := range aofFiles {
		if err := os.RemoveAll(filepath.Join(p.dir, f)); err != nil {
			return fmt.Errorf("redisserver: remove append-only files: %w", err)
		}
	}
	return nil
}

// Crash kills the server with SIGKILL and starts it again on the same port
// from what it left on disk: with Spec.Args "--appendonly yes
// --appendfsync everysec", its append-only file, which may lack the last
// second of writes.
func (p *Process) Crash(ctx context.Context) error {
	if err := p.Kill(); err != nil {
		return err
	}
	return p.start(ctx)
}

// Snapshot writes the dataset to an RDB file (SAVE: the dataset of a test
// is small, and the file is complete when it returns) and copies it to
// path, for RestartFrom: a backup taken now.
func (p *Process) Snapshot(ctx context.Context, path string) error {
	rdb := redis.NewClient(p.ClientOptions())
	defer rdb.Close()
	if err := rdb.Save(ctx).Err(); err != nil {
		return fmt.Errorf("redisserver: snapshot: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(p.dir, dbFile))
	if err != nil {
		return fmt.Errorf("redisserver: snapshot: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("redisserver: snapshot: %w", err)
	}
	return nil
}

// RestartFrom kills the server and starts it again on the same port from
// the RDB file at path (see Snapshot): Redis restored from an older backup,
// with every key it held then (keys whose expiry time passed meanwhile are
// gone on load, as RDB stores absolute expiry times). Append-only files are
// removed so the snapshot is what loads; a server whose Spec turns AOF on
// gets it back on (CONFIG SET appendonly yes) once loaded.
func (p *Process) RestartFrom(ctx context.Context, path string) error {
	if err := p.Kill(); err != nil {
		return err
	}
	if err := p.removeData(); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("redisserver: restore %s: %w", path, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, dbFile), b, 0o600); err != nil {
		return fmt.Errorf("redisserver: restore %s: %w", path, err)
	}
	if err := p.start(ctx, "--appendonly", "no"); err != nil {
		return err
	}
	if !p.aof() {
		return nil
	}
	rdb := redis.NewClient(p.ClientOptions())
	defer rdb.Close()
	if err := rdb.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		return fmt.Errorf("redisserver: turn AOF back on: %w", err)
	}
	return nil
}

// aof reports whether the Spec turns the append-only file on.
func (p *Process) aof() bool {
	on := false
	for i := 0; i+1 < len(p.spec.Args); i++ {
		if p.spec.Args[i] == "--appendonly" {
			on = p.spec.Args[i+1] == "yes"
		}
	}
	return on
}

// ClientOptions is how a client reaches the server: its address, and the
// TLS and credentials of its Spec. Each call returns a new value.
func (p *Process) ClientOptions() *redis.Options {
	return &redis.Options{Addr: p.Addr(), TLSConfig: p.spec.TLS, Username: p.spec.Username, Password: p.spec.Password}
}

// Kill sends SIGKILL, as a crash would, and waits for the exit; the
// directory stays for Restart. Killing a stopped process is a no-op.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	err := p.cmd.Process.Kill()
	<-p.done
	p.cmd, p.done = nil, nil
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redisserver: kill server on %s: %w", p.Addr(), err)
	}
	return nil
}

// waitPing polls PING until it succeeds, the process exits, or the deadline.
func waitPing(ctx context.Context, opts *redis.Options, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	o := *opts
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 200*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	o.MaxRetries, o.PoolSize = -1, 1
	rdb := redis.NewClient(&o)
	defer rdb.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if lastErr = rdb.Ping(ctx).Err(); lastErr == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("server exited during start-up")
		case <-ctx.Done():
			return fmt.Errorf("no PING reply before deadline (last error: %v): %w", lastErr, ctx.Err())
		case <-tick.C:
		}
	}
}

// FreePort asks the kernel for an unused loopback port. The port is free
// when returned, not reserved; Start retries if it is taken meanwhile,
// and other harnesses (chaos, the README walkthrough) must expect the same.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects the server's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 { // enough to explain a failed start
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
