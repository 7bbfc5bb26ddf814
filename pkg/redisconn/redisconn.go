// Package redisconn builds the daemon's Redis client for each deployment
// mode (one server, a sentinel-monitored master, a cluster) with the same
// short timeouts, ACL credentials and TLS, so nothing else in the daemon
// knows which mode it runs against: every caller takes a
// redis.UniversalClient.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Modes; they match config's redis.mode values.
const (
	Standalone = "standalone"
	Sentinel   = "sentinel"
	Cluster    = "cluster"
)

// Timeouts short enough that a dead Redis is noticed quickly (every loop of
// the daemon retries on its own); go-redis's default 3 retries with backoff
// ride out the dead pooled connections a Redis restart or failover leaves.
// ReadTimeout stays above pkg/queue's blocking-take slice.
const (
	DialTimeout  = 2 * time.Second
	ReadTimeout  = 3 * time.Second
	WriteTimeout = 3 * time.Second
)

// Options says how to reach Redis.
type Options struct {
	// Mode is Standalone (default), Sentinel or Cluster.
	Mode string
	// Addrs: the server (standalone, exactly one), the sentinels, or
	// cluster seed nodes.
	Addrs []string
	// MasterName is the master the sentinels monitor (Sentinel only).
	MasterName string
	// Username and Password authenticate to the data nodes (ACL AUTH
	// username password; an empty Username is the "default" user).
	Username, Password string
	// SentinelPassword authenticates to the sentinels (Sentinel only).
	SentinelPassword string
	// DB selects a database; Cluster has only 0.
	DB int
	// TLS, when non-nil, is used for every connection (sentinels included).
	TLS *tls.Config
	// PoolSize is the connections per node; 0 keeps go-redis's default
	// (10 per CPU). Every consumer worker holds one connection while it
	// blocks on the queue, so the pool must be larger than the consumer
	// concurrency or claims, heartbeats and /readyz queue up behind them.
	PoolSize int
}

// New returns a client for opts. It dials nothing: go-redis connects on
// first use, so a Redis that is down at start-up delays work, not start-up.
func New(opts Options) (redis.UniversalClient, error) {
	if len(opts.Addrs) == 0 {
		return nil, errors.New("redisconn: no address")
	}
	switch opts.Mode {
	case "", Standalone:
		if len(opts.Addrs) != 1 {
			return nil, fmt.Errorf("redisconn: standalone mode takes one address, got %d", len(opts.Addrs))
		}
		return redis.NewClient(&redis.Options{
			Addr: opts.Addrs[0], Username: opts.Username, Password: opts.Password, DB: opts.DB, TLSConfig: opts.TLS,
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout, PoolSize: opts.PoolSize,
		}), nil
	case Sentinel:
		if opts.MasterName == "" {
			return nil, errors.New("redisconn: sentinel mode needs a master name")
		}
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: opts.MasterName, SentinelAddrs: opts.Addrs, SentinelPassword: opts.SentinelPassword,
			Username: opts.Username, Password: opts.Password, DB: opts.DB, TLSConfig: opts.TLS,
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout, PoolSize: opts.PoolSize,
		}), nil
	case Cluster:
		if opts.DB != 0 {
			return nil, errors.New("redisconn: cluster mode has only database 0")
		}
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: opts.Addrs, Username: opts.Username, Password: opts.Password, TLSConfig: opts.TLS,
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout, PoolSize: opts.PoolSize,
		}), nil
	}
	return nil, fmt.Errorf("redisconn: unknown mode %q", opts.Mode)
}

// TLSFiles names the PEM files and checks of a TLS connection.
type TLSFiles struct {
	CAFile             string // verifies servers; "" means the system roots
	CertFile, KeyFile  string // client certificate, both or neither
	ServerName         string // "" means each node's host
	InsecureSkipVerify bool
}

// TLSConfig loads f into a tls.Config (TLS 1.2 at least).
func TLSConfig(f TLSFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName, InsecureSkipVerify: f.InsecureSkipVerify} //nolint:gosec // opt-in, documented as tests only
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redis tls: read ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis tls: ca_file %s holds no PEM certificate", f.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("redis tls: set both cert_file and key_file, or neither")
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("redis tls: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// ScanKeys returns every key matching pattern, found with SCAN so a large
// keyspace is not blocked. A cluster client's SCAN would reach one node
// only, so on a cluster every master is scanned.
func ScanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var (
		mu   sync.Mutex
		out  []string
		seen = map[string]bool{} // SCAN may return a key more than once
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 100).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			if k := iter.Val(); !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", pattern, err)
	}
	return out, nil
}
