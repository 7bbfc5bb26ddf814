package redisconn_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
)

func TestStandaloneACLUser(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	admin := s.Client(t)
	if err := admin.Do(ctx, "acl", "setuser", "agentsmith", "on", ">s3cret-acl", "~agentsmith:*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb, err := redisconn.New(redisconn.Options{Addrs: []string{s.Addr()}, Username: "agentsmith", Password: "s3cret-acl"})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if who, err := rdb.Do(ctx, "acl", "whoami").Text(); err != nil || who != "agentsmith" {
		t.Fatalf("ACL WHOAMI = %q, %v", who, err)
	}
	if err := rdb.Set(ctx, "agentsmith:epoch", "1", 0).Err(); err != nil {
		t.Errorf("write within the user's key pattern: %v", err)
	}
	// The ACL's key pattern is enforced for this user: proof the client
	// really authenticated as it, not as the default user.
	if err := rdb.Set(ctx, "other:key", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("write outside the key pattern = %v, want NOPERM", err)
	}

	bad, _ := redisconn.New(redisconn.Options{Addrs: []string{s.Addr()}, Username: "agentsmith", Password: "wrong"})
	defer bad.Close()
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("wrong password: %v, want WRONGPASS", err)
	}
}

func TestTLS(t *testing.T) {
	files := redistest.WriteTLSFiles(t)
	s := redistest.StartSpec(t, redistest.Spec{Args: files.ServerArgs(), TLS: files.ClientConfig(t)})
	ctx := context.Background()

	cfg, err := redisconn.TLSConfig(redisconn.TLSFiles{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey})
	if err != nil {
		t.Fatal(err)
	}
	rdb, _ := redisconn.New(redisconn.Options{Addrs: []string{s.Addr()}, TLS: cfg})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("over TLS: %v", err)
	}

	// Without the CA the server's certificate is not trusted.
	noCA, _ := redisconn.TLSConfig(redisconn.TLSFiles{CertFile: files.ClientCert, KeyFile: files.ClientKey})
	untrusting, _ := redisconn.New(redisconn.Options{Addrs: []string{s.Addr()}, TLS: noCA})
	defer untrusting.Close()
	if err := untrusting.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without ca_file: %v, want a certificate error", err)
	}
	// A plain client is not served at all.
	plain, _ := redisconn.New(redisconn.Options{Addrs: []string{s.Addr()}})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Error("plain client reached a TLS-only server")
	}
}

func TestTLSConfigErrors(t *testing.T) {
	files := redistest.WriteTLSFiles(t)
	for name, f := range map[string]redisconn.TLSFiles{
		"missing ca":   {CAFile: "/nonexistent/ca.pem"},
		"ca not pem":   {CAFile: files.ClientKey},
		"cert no key":  {CertFile: files.ClientCert},
		"key mismatch": {CertFile: files.ClientCert, KeyFile: files.ServerKey},
	} {
		if _, err := redisconn.TLSConfig(f); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]redisconn.Options{
		"no address":            {},
		"standalone two":        {Addrs: []string{"a:1", "b:2"}},
		"sentinel without name": {Mode: redisconn.Sentinel, Addrs: []string{"a:1"}},
		"cluster db":            {Mode: redisconn.Cluster, Addrs: []string{"a:1"}, DB: 1},
		"unknown mode":          {Mode: "ring", Addrs: []string{"a:1"}},
	} {
		if _, err := redisconn.New(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSentinelFollowsTheMaster(t *testing.T) {
	s := redistest.StartSentinel(t, redistest.SentinelOptions{Password: "data-pw", SentinelPassword: "sentinel-pw"})
	rdb, err := redisconn.New(redisconn.Options{Mode: redisconn.Sentinel, Addrs: s.Addrs(), MasterName: redistest.SentinelMaster,
		Password: "data-pw", SentinelPassword: "sentinel-pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Master.Client(t).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("master has k = %q, %v", v, err)
	}
}

func TestScanKeysCoversEveryClusterMaster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb, err := redisconn.New(redisconn.Options{Mode: redisconn.Cluster, Addrs: c.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	var want []string
	for i := range 30 { // untagged: spread over all three masters
		k := fmt.Sprintf("scan:%d", i)
		want = append(want, k)
		if err := rdb.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := redisconn.ScanKeys(ctx, rdb, "scan:*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ScanKeys found %d keys, want %d", len(got), len(want))
	}
}
