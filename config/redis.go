package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// Redis modes. Standalone is one server (a managed Redis endpoint counts);
// sentinel asks the sentinels for the current master and follows failovers;
// cluster spreads nothing: every key carries the hash tag {agentsmith} (see
// pkg/keys), so one shard holds the daemon's small keyspace and every
// multi-key script stays legal.
const (
	RedisStandalone = "standalone"
	RedisSentinel   = "sentinel"
	RedisCluster    = "cluster"
)

// validate checks the redis block, folds addr into Addrs and the shorthand
// secrets into their fields, and makes TLS file paths absolute.
func (r *Redis) validate(errs *Errors, baseDir string) {
	switch r.Mode {
	case RedisStandalone, RedisSentinel, RedisCluster:
	default:
		errs.add("redis.mode", fmt.Sprintf("unknown mode %q (want standalone, sentinel or cluster)", r.Mode))
	}
	if r.Addr != "" {
		if len(r.Addrs) > 0 {
			errs.add("redis.addrs", "set only one of addr and addrs")
		} else if checkHostPort(errs, "redis.addr", r.Addr) {
			r.Addrs = []string{r.Addr}
		}
	} else {
		for i, a := range r.Addrs {
			checkHostPort(errs, fmt.Sprintf("redis.addrs[%d]", i), a)
		}
	}
	if r.DB < 0 {
		errs.add("redis.db", "must not be negative")
	}
	switch r.Mode {
	case RedisStandalone:
		if len(r.Addrs) > 1 {
			errs.add("redis.addrs", "standalone mode takes one address (mode: sentinel or cluster take several)")
		}
	case RedisSentinel:
		if len(r.Addrs) == 0 {
			errs.add("redis.addrs", "required in sentinel mode: the sentinels' host:port")
		}
		if r.MasterName == "" {
			errs.add("redis.master_name", "required in sentinel mode")
		}
	case RedisCluster:
		if len(r.Addrs) == 0 {
			errs.add("redis.addrs", "required in cluster mode: one or more nodes' host:port")
		}
		if r.DB != 0 {
			errs.add("redis.db", "must be 0 in cluster mode (a cluster has only database 0)")
		}
	}
	oneOf(&r.Password, "redis.password", errs, r.Password, r.passwordEnv, r.passwordFile)
	oneOf(&r.SentinelPassword, "redis.sentinel_password", errs, r.SentinelPassword, r.sentinelPasswordEnv, r.sentinelPasswordFile)
	if r.Mode != RedisSentinel {
		if r.MasterName != "" {
			errs.add("redis.master_name", "only for mode: sentinel")
		}
		if r.SentinelPassword.IsSet() {
			errs.add("redis.sentinel_password", "only for mode: sentinel")
		}
	}
	r.TLS.validate(errs, baseDir)
}

func (t *RedisTLS) validate(errs *Errors, baseDir string) {
	if !t.Enabled {
		if *t != (RedisTLS{}) {
			errs.add("redis.tls.enabled", "must be true when other tls fields are set")
		}
		return
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs.add("redis.tls", "set both cert_file and key_file, or neither")
	}
	for _, f := range []struct {
		path string
		file *string
	}{{"redis.tls.ca_file", &t.CAFile}, {"redis.tls.cert_file", &t.CertFile}, {"redis.tls.key_file", &t.KeyFile}} {
		if *f.file == "" {
			continue
		}
		if baseDir != "" && !filepath.IsAbs(*f.file) {
			*f.file = filepath.Join(baseDir, *f.file)
		}
		if _, err := os.Stat(*f.file); err != nil {
			errs.add(f.path, fmt.Sprintf("cannot read %s: %s", *f.file, ioReason(err)))
		}
	}
}

// checkHostPort reports whether addr is host:port, adding an error if not.
func checkHostPort(errs *Errors, path, addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		errs.add(path, `expected host:port such as "redis:6379"`)
		return false
	}
	return true
}
