package daemon_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/platforms/github"
)

// The daemon's receiver names, in a rejected delivery's log line, the
// project and the variables its secrets come from, as the config names
// them, and records the rejection in Redis for check --webhook.
func TestRejectedDeliveryNamesTheSecretsVariables(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("wh-1", "")
	obs, logs := observer.New(zap.InfoLevel)
	d, err := daemon.New(cfg, daemon.Options{Logger: zap.New(obs), OwnRedis: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("daemon did not stop within 20s")
		}
	})
	select {
	case <-d.Listening():
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	}
	body := []byte(`{"action":"labeled","issue":{"number":1,"state":"open"},"repository":{"full_name":"` + repo + `"}}`)
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.Addr()+"/webhooks/github", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(github.HeaderEvent, "issues")
	req.Header.Set(github.HeaderSignature, github.SignatureHeader(body, []byte("a-stale-secret")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	lines := logs.FilterMessage("webhook rejected: authentication failed").All()
	if len(lines) != 1 {
		t.Fatalf("%d rejection lines, want 1", len(lines))
	}
	f := lines[0].ContextMap()
	from, _ := f["secretFrom"].([]any)
	if f["project"] != "app" || f["reason"] != receiver.ReasonWrongSecret ||
		!slices.Equal(from, []any{"env:E2E_OLD_SECRET", "env:E2E_SECRET"}) {
		t.Errorf("rejection line %v, want project app, wrong_secret, secretFrom [env:E2E_OLD_SECRET env:E2E_SECRET]", f)
	}
	rec, err := receiver.ReadAuthRecord(ctx, e.redis.Client(t), github.Platform, "app")
	if err != nil || rec.Rejected != 1 || rec.RejectedReason != receiver.ReasonWrongSecret {
		t.Errorf("record %+v, %v; want 1 rejected wrong_secret", rec, err)
	}
}
