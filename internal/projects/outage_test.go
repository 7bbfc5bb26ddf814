package projects

import (
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/pkg/outage"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// A refused token's line names the project and the environment variable
// that holds the token, and no line holds the token itself.
func TestRefusedTokenLineNamesTheVariableNotTheToken(t *testing.T) {
	const token = "ghp_0123456789abcdefSECRET"
	pc := &config.Project{Name: "app", Platform: "github", BaseURL: "https://api.github.com/",
		Token: config.NewSecret("APP_GITHUB_TOKEN", "", token)}
	obs, logs := observer.New(zap.DebugLevel)
	ts := outage.NewTrackers(0, nil, zap.New(obs))
	calls := ts.Observer(OutageProject(pc))
	calls.ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusUnauthorized, Remaining: -1})
	calls.ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusOK, Remaining: -1})
	if len(logs.All()) != 2 {
		t.Fatalf("%d lines, want the token's start and end", len(logs.All()))
	}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	for i, le := range logs.All() {
		buf, err := enc.EncodeEntry(le.Entry, le.Context)
		if err != nil {
			t.Fatal(err)
		}
		line := buf.String()
		if strings.Contains(line, token) {
			t.Errorf("a line holds the token: %s", line)
		}
		if i == 0 && (!strings.Contains(line, "APP_GITHUB_TOKEN") || !strings.Contains(line, `"project":"app"`)) {
			t.Errorf("the token line names neither the variable nor the project: %s", line)
		}
	}
}
