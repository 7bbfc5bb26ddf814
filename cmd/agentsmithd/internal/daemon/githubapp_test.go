package daemon_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms/sim"
)

// A GitHub project authenticated as an App installation runs a ticket to
// Done against a sim that accepts no static token: every call carries an
// installation token the daemon obtained with its signed JWT.
func TestGitHubAppWebhookToDone(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWithSim(t, simcases.GitHub, sim.Options{Tokens: []string{"no-static-token-is-used"},
		Apps: []sim.App{{ID: 901, PublicKey: &key.PublicKey, Installations: []int64{55}}}})
	keyFile := filepath.Join(e.dir, "app.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	yml := e.configYAML("replica-a", "")
	if !strings.Contains(yml, "token: {env: E2E_TOKEN}") {
		t.Fatal("harness config changed: no token line to replace")
	}
	yml = strings.Replace(yml, "token: {env: E2E_TOKEN}",
		fmt.Sprintf("github_app: {app_id: 901, installation_id: 55, private_key_file: %q}", keyFile), 1)
	cfg, err := config.Parse([]byte(yml), lookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	e.startDaemon(cfg)
	n := e.sim.CreateIssue(e.repo, "App-authenticated ticket", "", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.Done)
	if got := e.sim.Stats().Calls["POST /app/installations/{installation_id}/access_tokens"]; got < 1 {
		t.Errorf("access token requests = %d, want at least 1", got)
	}
}
