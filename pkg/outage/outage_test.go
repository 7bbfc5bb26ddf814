package outage_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/pkg/outage"
)

// A failure every second for 12 minutes with the default 5 min reminder is
// one start line, two reminders and one end line with the duration.
func TestTrackerLinesOfOneOutage(t *testing.T) {
	obs, logs := observer.New(zap.DebugLevel)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := outage.New(outage.Config{What: "redis", Where: "10.0.0.1:6379", Meanwhile: "retrying",
		Now: func() time.Time { return now }, Log: zap.New(obs)})
	tr.OK() // no outage: nothing to end
	boom := errors.New("connection refused")
	if tr.Fail(boom) {
		t.Error("the first failure reports an outage already under way")
	}
	for range 12 * 60 {
		now = now.Add(time.Second)
		tr.Fail(boom)
	}
	tr.OK()
	tr.OK()
	var got []string
	for _, le := range logs.All() {
		got = append(got, fmt.Sprintf("%s %s", le.Level, le.Message))
	}
	want := []string{"warn redis unreachable; retrying", "warn redis still unreachable; retrying",
		"warn redis still unreachable; retrying", "info redis reachable again"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if d := logs.All()[3].ContextMap()["lasted"]; d != 12*time.Minute {
		t.Errorf("lasted %v, want 12m", d)
	}
}

// Fold writes a warning caused by the dependency at debug and counts it as
// a failure; a warning with another cause stays a warning.
func TestFoldMovesTheDependencysLinesToDebug(t *testing.T) {
	obs, logs := observer.New(zap.DebugLevel)
	tracked, _ := observer.New(zap.DebugLevel)
	tr := outage.New(outage.Config{What: "redis", Where: "127.0.0.1:6379", Log: zap.New(tracked)})
	log := zap.New(outage.Fold(obs, tr, outage.Dialing("127.0.0.1:6379")))
	dial := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379}, Err: syscall.ECONNREFUSED}
	log.Warn("take request", zap.Error(fmt.Errorf("take: %w", dial)))
	if !tr.Down() {
		t.Fatal("a dial error to the address started no outage")
	}
	log.Warn("poll failed", zap.Error(errors.New("404 Not Found")))
	log.Error("renew", zap.Error(syscall.ECONNRESET))
	levels := map[string]zapcore.Level{}
	for _, le := range logs.All() {
		levels[le.Message] = le.Level
	}
	want := map[string]zapcore.Level{"take request": zapcore.DebugLevel, "poll failed": zapcore.WarnLevel, "renew": zapcore.DebugLevel}
	if fmt.Sprint(levels) != fmt.Sprint(want) {
		t.Errorf("levels %v, want %v", levels, want)
	}
}

// A tracker's timeout folded while Redis is down is not Redis's failure:
// it neither reminds of the outage nor puts its error in Redis's lines.
func TestFoldedForeignErrorsDoNotFeedTheOutage(t *testing.T) {
	tracked, lines := observer.New(zap.DebugLevel)
	obs, _ := observer.New(zap.DebugLevel)
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	tr := outage.New(outage.Config{What: "redis", Where: "127.0.0.1:6379", Reminder: time.Minute,
		Now: func() time.Time { return now }, Log: zap.New(tracked)})
	log := zap.New(outage.Fold(obs, tr, outage.Dialing("127.0.0.1:6379")))
	tr.Fail(errors.New("dial tcp 127.0.0.1:6379: connect: connection refused"))
	now = now.Add(2 * time.Minute)
	log.Warn("post the comment", zap.Error(fmt.Errorf("tracker: %w", context.DeadlineExceeded)))
	for _, e := range lines.All() {
		if strings.Contains(e.Message, "still") || strings.Contains(fmt.Sprint(e.ContextMap()), "deadline") {
			t.Errorf("a tracker's timeout fed Redis's outage: %s %v", e.Message, e.ContextMap())
		}
	}
}
