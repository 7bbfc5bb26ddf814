package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
)

// SentinelMaster is the master name a Sentinel setup monitors.
const SentinelMaster = "agentsmith-test"

// SentinelOptions configures StartSentinel.
type SentinelOptions struct {
	// Password is the data nodes' requirepass (and the replica's
	// masterauth, and the sentinel's auth-pass); "" means none.
	Password string
	// SentinelPassword is the sentinel's own requirepass; "" means none.
	SentinelPassword string
}

// Sentinel is a test's private Sentinel setup: one master, one replica
// following it, one sentinel monitoring them (quorum 1).
type Sentinel struct {
	Master, Replica, Sentinel *Server
}

// StartSentinel starts the master and the replica, waits until the
// replica's link to the master is up, then starts the sentinel. Every server
// stops at cleanup.
func StartSentinel(t testing.TB, opts SentinelOptions) *Sentinel {
	t.Helper()
	auth := func(extra ...string) []string {
		if opts.Password == "" {
			return extra
		}
		return append([]string{"--requirepass", opts.Password, "--masterauth", opts.Password}, extra...)
	}
	s := &Sentinel{}
	s.Master = StartSpec(t, Spec{Args: auth(), Password: opts.Password})
	host, port, _ := strings.Cut(s.Master.Addr(), ":")
	s.Replica = StartSpec(t, Spec{Args: auth("--replicaof", host, port), Password: opts.Password})
	ctx, cancel := context.WithTimeout(context.Background(), redisserver.StartTimeout)
	defer cancel()
	if err := waitLinkUp(ctx, s.Replica); err != nil {
		t.Fatalf("redistest: sentinel: %v", err)
	}
	conf := fmt.Sprintf("sentinel monitor %s %s %s 1\nsentinel down-after-milliseconds %[1]s 1000\nsentinel failover-timeout %[1]s 5000\n",
		SentinelMaster, host, port)
	if opts.Password != "" {
		conf += fmt.Sprintf("sentinel auth-pass %s %s\n", SentinelMaster, opts.Password)
	}
	if opts.SentinelPassword != "" {
		conf += "requirepass " + opts.SentinelPassword + "\n"
	}
	s.Sentinel = StartSpec(t, Spec{SentinelConf: conf, Password: opts.SentinelPassword})
	return s
}

// waitLinkUp polls the replica's INFO replication until its link to the
// master is up.
func waitLinkUp(ctx context.Context, replica *Server) error {
	rdb := redis.NewClient(replica.p.ClientOptions())
	defer rdb.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := rdb.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(errors.New("replica did not link to its master before the deadline"), err)
		case <-tick.C:
		}
	}
}

// Addrs is the sentinel address list of a failover client.
func (s *Sentinel) Addrs() []string { return []string{s.Sentinel.Addr()} }

// MasterAddr asks the sentinel which address it names as master now
// (SENTINEL GET-MASTER-ADDR-BY-NAME); after a failover it is the replica's.
func (s *Sentinel) MasterAddr(t testing.TB, sentinelPassword string) string {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr(), Password: sentinelPassword})
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil || len(addr) != 2 {
		return ""
	}
	return addr[0] + ":" + addr[1]
}
