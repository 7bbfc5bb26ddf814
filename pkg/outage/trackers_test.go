package outage_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/pkg/outage"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

var app = outage.Project{Name: "app", Platform: "github", BaseURL: "http://127.0.0.1:8089/api/v3/",
	Secret: "projects[app].token env:APP_GITHUB_TOKEN"}

// trackerLog is a logger folded by ts whose lines, and ts's own, end in
// one observer, as in the daemon.
func trackerLog(reminder time.Duration, now func() time.Time) (*outage.Trackers, *zap.Logger, *observer.ObservedLogs) {
	obs, logs := observer.New(zap.DebugLevel)
	ts := outage.NewTrackers(reminder, now, zap.New(obs).Named("outage"))
	return ts, zap.New(outage.FoldTrackers(obs, ts)), logs
}

// aboveDebug is every line an operator reads, as "level message".
func aboveDebug(logs *observer.ObservedLogs) []string {
	var out []string
	for _, le := range logs.All() {
		if le.Level > zapcore.DebugLevel {
			out = append(out, le.Level.String()+" "+le.Message)
		}
	}
	return out
}

// A tracker that fails every call for 60 s, a call every 100 ms, each
// failure also logged by its caller, is one start line, a reminder every
// 20 s and one end line with the duration; the callers' own 600 lines go
// to debug.
func TestTrackerOutageIsOneLineEachWay(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	ts, log, logs := trackerLog(20*time.Second, func() time.Time { return now })
	obs := ts.Observer(app)
	poller := log.Named("poller")
	consumer := log.Named("consumer").With(zap.String("project", app.Name))
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for i := range 600 {
		if i%2 == 0 {
			obs.ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusServiceUnavailable, Remaining: -1})
			poller.Warn("poll failed", zap.String("project", app.Name), zap.Error(fmt.Errorf("list issues: 503")))
		} else {
			obs.ObserveCall(trackerhttp.Call{Method: "PATCH", Remaining: -1, Err: refused})
			consumer.Error("transition", zap.Error(fmt.Errorf("PATCH %s: %w", app.BaseURL, refused)))
		}
		now = now.Add(100 * time.Millisecond)
	}
	obs.ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusOK, Remaining: -1})
	log.Warn("another project's poll failed", zap.String("project", "other"), zap.Error(fmt.Errorf("list issues: 503")))
	want := []string{"warn tracker unreachable; the project's tickets are not claimed or moved until it answers; retrying",
		"warn tracker still unreachable; the project's tickets are not claimed or moved until it answers; retrying",
		"warn tracker still unreachable; the project's tickets are not claimed or moved until it answers; retrying",
		"info tracker reachable again", "warn another project's poll failed"}
	if got := aboveDebug(logs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d lines above debug, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	lines := logs.Filter(func(le observer.LoggedEntry) bool { return le.LoggerName == "outage" }).All()
	start, end := lines[0].ContextMap(), lines[3].ContextMap()
	if start["project"] != "app" || start["platform"] != "github" || start["where"] != app.BaseURL {
		t.Errorf("start line names %v, want project app, platform github, where %s", start, app.BaseURL)
	}
	if got := lines[2].ContextMap()["failures"]; got != int64(401) {
		t.Errorf("second reminder counts %v failed calls, want 401 (the call at 40 s, one every 100 ms from 0)", got)
	}
	if end["lasted"] != time.Minute || end["failures"] != int64(600) {
		t.Errorf("end line: lasted %v, failures %v; want 1m and 600", end["lasted"], end["failures"])
	}
}

// A 401 is one line naming the project and the secret to replace, however
// many calls it refuses, and folds the 401s it causes; the first accepted
// call ends it. A cancelled call or a 404 starts nothing.
func TestRefusedTokenIsOneLineNamingTheSecret(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	ts, log, logs := trackerLog(0, func() time.Time { return now })
	obs := ts.Observer(app)
	obs.ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusNotFound, Remaining: -1})
	obs.ObserveCall(trackerhttp.Call{Method: "GET", Remaining: -1, Err: fmt.Errorf("get: %w", context.Canceled)})
	for range 50 {
		obs.ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusUnauthorized, Remaining: -1})
		log.Warn("poll failed", zap.String("project", app.Name), zap.Error(fmt.Errorf("GET %s: 401 Bad credentials", app.BaseURL)))
		now = now.Add(time.Second)
	}
	// A line naming no project but the host: the refused token's 401 is
	// folded, another failure on the same host (another project's) is not.
	log.Warn("housekeeping cycle failed", zap.Error(fmt.Errorf("list: %w", platforms.Rejected(http.StatusUnauthorized,
		fmt.Errorf("GET %sissues: 401", app.BaseURL)))))
	log.Warn("housekeeping cycle failed", zap.Error(fmt.Errorf("GET %sissues: 502", app.BaseURL)))
	obs.ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusOK, Remaining: -1})
	got := aboveDebug(logs)
	want := []string{"warn tracker token refused; it is invalid, expired or revoked: replace the credential named in where and restart the replica",
		"warn housekeeping cycle failed", "info tracker token accepted again"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines above debug:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	first := logs.All()[0].ContextMap()
	if first["project"] != "app" || !strings.Contains(fmt.Sprint(first["where"]), "APP_GITHUB_TOKEN") {
		t.Errorf("token line names %v, want project app and APP_GITHUB_TOKEN", first)
	}
}

// While one project's tracker is down, another project's line that names
// the same host (both on one GitHub) is that project's: it stays a warning.
func TestAnotherProjectOnTheSameHostIsNotFolded(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	ts, log, logs := trackerLog(time.Minute, func() time.Time { return now })
	ts.Observer(app).ObserveCall(trackerhttp.Call{Method: "GET", Status: http.StatusBadGateway, Remaining: -1})
	log.Warn("transition", zap.String("project", "other"), zap.Error(fmt.Errorf("PATCH %sissues/7: 502", app.BaseURL)))
	log.Warn("housekeeping cycle failed", zap.Error(fmt.Errorf("GET %sissues: 502", app.BaseURL)))
	want := []string{"warn tracker unreachable; the project's tickets are not claimed or moved until it answers; retrying",
		"warn transition"}
	if got := aboveDebug(logs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines above debug:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
