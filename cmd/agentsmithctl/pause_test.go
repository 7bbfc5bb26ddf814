package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestPauseResume(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	if out := w.mustCtl("pause", "app"); !strings.Contains(out, "paused app") {
		t.Fatalf("pause:\n%s", out)
	}
	if n, _ := w.rdb.Exists(ctx, keys.Paused("app")).Result(); n != 1 {
		t.Fatal("pause set no key")
	}
	if code, _, errOut := w.ctl("pause", "nope"); code != exitNotFound || !strings.Contains(errOut, `"nope"`) {
		t.Errorf("pause of an unknown project: exit %d, %s", code, errOut)
	}
	if n, _ := w.rdb.Exists(ctx, keys.Paused("nope")).Result(); n != 0 {
		t.Error("an unknown project was paused")
	}
	out := w.mustCtl("status")
	if !strings.Contains(out, "PAUSED  BY") || !strings.Contains(out, "\napp     agentsmithctl@") {
		t.Errorf("status lacks the paused project:\n%s", out)
	}
	var snap ops.Snapshot
	if err := json.Unmarshal([]byte(w.mustCtl("status", "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Paused) != 1 || snap.Paused[0].Project != "app" {
		t.Errorf("status -o json paused = %+v", snap.Paused)
	}
	// A request a consumer put aside for the pause, and a retry waiting out
	// its backoff: resume makes only the first due.
	ref := platforms.Ref{Platform: "github", Project: "app", ID: repo + "#1"}
	later := time.Now().Add(time.Hour)
	aside := lifecycle.PipelineRequest{ID: "a", Ref: ref, Attempt: 1, PausedAside: true}.Encode()
	retry := lifecycle.PipelineRequest{ID: "r", Ref: ref, Attempt: 2, Source: lifecycle.SourceRetry}.Encode()
	w.rdb.ZAdd(ctx, keys.Delayed(), redis.Z{Score: float64(later.UnixMilli()), Member: aside}, redis.Z{Score: float64(later.UnixMilli()), Member: retry})
	if out := w.mustCtl("resume", "app"); !strings.Contains(out, "resumed app: 1 waiting request made due") {
		t.Errorf("resume:\n%s", out)
	}
	now := float64(time.Now().UnixMilli())
	if s := w.rdb.ZScore(ctx, keys.Delayed(), string(aside)).Val(); s > now {
		t.Errorf("put-aside request still due in %v", time.Duration(s-now)*time.Millisecond)
	}
	if s := w.rdb.ZScore(ctx, keys.Delayed(), string(retry)).Val(); s != float64(later.UnixMilli()) {
		t.Errorf("resume moved a retry's backoff")
	}
	if out := w.mustCtl("resume", "app", "-o", "json"); !strings.Contains(out, `"was_paused": false`) {
		t.Errorf("second resume: %s", out)
	}
	if out := w.mustCtl("status"); strings.Contains(out, "PAUSED") {
		t.Errorf("status still shows a pause:\n%s", out)
	}
}

// pause and resume without a project say what to pass, not cobra's
// "accepts 1 arg(s), received 0".
func TestPauseResumeArgumentMessages(t *testing.T) {
	w := newWorld(t)
	for _, verb := range []string{"pause", "resume"} {
		code, _, errOut := w.ctl(verb)
		if code != exitUsage || !strings.Contains(errOut, verb+" needs the project to "+verb+": its name in the config") || strings.Contains(errOut, "arg(s)") {
			t.Errorf("%s without a project: exit %d, %q", verb, code, errOut)
		}
		code, _, errOut = w.ctl(verb, "app", "ops")
		if code != exitUsage || !strings.Contains(errOut, "takes one project, got 2 (app ops)") {
			t.Errorf("%s of two projects: exit %d, %q", verb, code, errOut)
		}
	}
	for due, want := range map[int]string{0: "resumed app: 0 waiting requests made due", 1: "resumed app: 1 waiting request made due",
		2: "resumed app: 2 waiting requests made due"} {
		if got := resumed("app", due); got != want {
			t.Errorf("resumed(app, %d) = %q, want %q", due, got, want)
		}
	}
}
