package projects

import (
	"crypto/tls"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
)

// Redis builds the client for the configured Redis mode (standalone,
// sentinel or cluster, with ACL user and TLS), so the daemon and
// `agentsmithd check` reach Redis the same way. poolSize 0 keeps go-redis's
// default. It dials nothing.
func Redis(r config.Redis, poolSize int) (redis.UniversalClient, error) {
	var tlsCfg *tls.Config
	if r.TLS.Enabled {
		var err error
		tlsCfg, err = redisconn.TLSConfig(redisconn.TLSFiles{CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile,
			KeyFile: r.TLS.KeyFile, ServerName: r.TLS.ServerName, InsecureSkipVerify: r.TLS.InsecureSkipVerify})
		if err != nil {
			return nil, err
		}
	}
	return redisconn.New(redisconn.Options{Mode: r.Mode, Addrs: r.Addrs, MasterName: r.MasterName,
		Username: r.Username, Password: r.Password.Value(), SentinelPassword: r.SentinelPassword.Value(),
		DB: r.DB, TLS: tlsCfg, PoolSize: poolSize})
}

// GuardRedis is how a pipeline's run guard reaches the same Redis as the
// daemon (lifecycle/runguard): the same mode, addresses, credentials, TLS
// files and key prefix. It holds secrets: it travels only over the guard's
// orders pipe.
func GuardRedis(r config.Redis) runguard.Redis {
	g := runguard.Redis{Mode: r.Mode, Addrs: r.Addrs, MasterName: r.MasterName, Username: r.Username,
		Password: r.Password.Value(), SentinelPassword: r.SentinelPassword.Value(), DB: r.DB, HashTag: keys.HashTagged()}
	if r.TLS.Enabled {
		g.TLS = &redisconn.TLSFiles{CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile,
			KeyFile: r.TLS.KeyFile, ServerName: r.TLS.ServerName, InsecureSkipVerify: r.TLS.InsecureSkipVerify}
	}
	return g
}
