package daemon

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/budget"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// The GitHub client the daemon composes paces its writes before GitHub's
// secondary limits unless github.pace_secondary says false: 100 tickets
// claimed a second apart (pending → enqueued, 200 content creations in
// 100 s, over GitHub's 80 a minute) against trackersim enforcing the limits
// draw no refusal with the default and some with pacing off. Only the
// clock is the test's (shared with the sim and the budget, so a paced wait
// passes in no time); everything else is the daemon's transport and
// tracker.
func TestDaemonGitHubClientPacesSecondaryLimits(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	// REST label writes: two content-creating writes a transition, which
	// the 80-a-minute window paces within this test's 100 s.
	for _, extra := range []string{"\n    github: {api: rest}", "\n    github: {api: rest, pace_secondary: false}"} {
		t.Run(fmt.Sprintf("extra=%q", extra), func(t *testing.T) {
			start := time.Unix(1_700_000_000, 0)
			clock := trackerhttptest.NewClock(start)
			sim := trackersim.New(trackersim.Options{Tokens: []string{"pace-token"}, Clock: clock.Now, GitHubSecondaryLimits: true, GitHubLabelsAsContent: true})
			t.Cleanup(sim.Close)
			srv := httptest.NewServer(sim.Handler())
			t.Cleanup(srv.Close)
			cfg, err := config.Parse([]byte(fmt.Sprintf("redis: {addr: %q}\nprojects:\n  - name: app\n    %s\n    polling: {enabled: true}\n    pipeline: {command: [run]}%s\n",
				"127.0.0.1:1", simcases.GitHub.Project(srv.URL, "PACE_TOKEN", "    "), extra)),
				func(string) (string, bool) { return "pace-token", true })
			if err != nil {
				t.Fatal(err)
			}
			pc := &cfg.Projects[0]
			opts := trackerOptions(cfg, pc, rdb, zap.NewNop(), nil)
			// The fake clock dates the pace entries too (the daemon's
			// budget dates them by Redis's TIME, which a fake sleep does
			// not move).
			opts.Clock, opts.Sleep, opts.Budget = clock.Now, clock.Sleep, budget.New(rdb, clock.Now)
			tr, _, _, err := projects.Tracker(pc, rdb, trackerhttp.NewClientWith(opts), "", cfg.LabelPrefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			pending, enqueued := lifecycletest.Label(lifecycle.Pending), lifecycletest.Label(lifecycle.Enqueued)
			for range 100 {
				n := sim.CreateIssue(pc.Repo, "t", "", pending)
				tk := &platforms.Ticket{Ref: platforms.Ref{Platform: pc.Platform, ID: simcases.GitHub.ID(n)}, Labels: []string{pending}}
				if _, err := tr.Relabel(context.Background(), tk, []string{pending}, enqueued); err != nil {
					failed++
				}
				clock.Advance(time.Second)
			}
			refused := sim.Stats().SecondaryRefused
			if pc.GitHub.Paced() {
				if refused != 0 || failed != 0 {
					t.Errorf("paced: %d secondary-limit refusals, %d failed claims; want none", refused, failed)
				}
				if took := clock.Now().Sub(start); took < 100*time.Second+20*time.Second {
					t.Errorf("200 writes took %v of GitHub time: not paced to 80 a minute", took)
				}
			} else if refused == 0 {
				t.Error("pace_secondary: false drew no refusal: the sim does not enforce the limit this test is about")
			}
		})
	}
}
