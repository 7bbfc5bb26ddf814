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
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// A GitHub project authenticated as an App installation runs a ticket to
// Done against a sim that accepts no static token: every call carries an
// installation token the daemon obtained with its signed JWT.
func TestGitHubAppWebhookToDone(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWithSim(t, simcases.GitHub, trackersim.Options{Tokens: []string{"no-static-token-is-used"},
		Apps: []trackersim.App{{ID: 901, PublicKey: &key.PublicKey, Installations: []int64{55}}}})
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

// A GitHub App project with installation: all follows what the
// installation is granted: a repository added to a "selected" installation
// is served once GitHub's installation_repositories delivery reaches the
// daemon (the full listing is an hour away), and one removed is retired.
func TestAppInstallationRepositoriesAreFollowed(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWithSim(t, simcases.GitHub, trackersim.Options{Tokens: []string{"no-static-token-is-used"},
		Apps: []trackersim.App{{ID: 901, PublicKey: &key.PublicKey, Installations: []int64{55}, Selected: map[int64][]string{55: {"acme/app"}}}}})
	e.sim.CreateRepo("acme/app")
	keyFile := filepath.Join(e.dir, "app.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	yml := e.configYAML("replica-a", "discovery: {interval: 1h, signal_check: 100ms}\n")
	yml = strings.Replace(yml, "token: {env: E2E_TOKEN}",
		fmt.Sprintf("github_app: {app_id: 901, installation_id: 55, private_key_file: %q}", keyFile), 1)
	yml = strings.Replace(yml, "repo: acme/app", "installation: all", 1)
	d, watched := e.startFollowing(yml)

	// Not granted: its repository delivery makes the daemon list the
	// installation, which finds nothing new. The grant waits for that
	// listing, so only the grant's own delivery can add the repository.
	const listing = "GET /installation/repositories"
	// One listing at start (Expand), one the refresher begins with.
	eventually.Wait(t, 10*time.Second, "the refresher's first listing", func() bool { return e.sim.Stats().Calls[listing] >= 2 })
	before := e.sim.Stats().Calls[listing]
	e.sim.CreateRepo("acme/new")
	eventually.Wait(t, 10*time.Second, "the listing the repository delivery asked for", func() bool {
		return e.sim.Stats().Calls[listing] > before
	})
	if !watched("app.app") || watched("app.new") {
		t.Fatalf("watched before the grant: %v", d.Claims().Projects().Names())
	}
	e.sim.GrantRepositories(55, "acme/new")
	eventually.Wait(t, 10*time.Second, "the granted repository to be watched", func() bool { return watched("app.new") })
	e.repo = "acme/new"
	n := e.sim.CreateIssue("acme/new", "plain", "", "agent-smith")
	if got := e.waitState(n, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
		t.Fatalf("acme/new#%d: %v", n, got)
	}
	e.sim.RevokeRepositories(55, "acme/new")
	eventually.Wait(t, 10*time.Second, "the revoked repository to be retired", func() bool { return !watched("app.new") })
}
