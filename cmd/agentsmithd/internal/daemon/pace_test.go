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
// claimed (pending → enqueued, 200 REST label writes) against trackersim
// enforcing the limits. By default label writes pay points only, and the
// sim counts only creations: claimed half a second apart (1,000 points in
// 50 s, over GitHub's 900 a minute), paced they draw no refusal, unpaced
// some. With github.pace_labels_as_content the writes are also paced as
// content creations: claimed a second apart (200 in 100 s, over GitHub's
// 80 a minute) they draw no refusal from a sim counting them, and the
// default pacing draws some. The spacing keeps each paced wait within the
// daemon's request timeout (30 s), past which a claim fails to be retried
// by the poller. Only the clock is
// the test's (shared with the sim and the budget, so a paced wait passes
// in no time); everything else is the daemon's transport and tracker.
func TestDaemonGitHubClientPacesSecondaryLimits(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	for _, c := range []struct {
		extra        string
		every        time.Duration // between claims
		strictSim    bool
		wantRefusals bool
		minTook      time.Duration // of GitHub time, when paced
	}{
		{extra: "\n    github: {api: rest}", every: time.Second / 2, minTook: time.Minute},
		{extra: "\n    github: {api: rest, pace_secondary: false}", every: time.Second / 2, wantRefusals: true},
		{extra: "\n    github: {api: rest, pace_labels_as_content: true}", every: time.Second, strictSim: true, minTook: 2 * time.Minute},
		{extra: "\n    github: {api: rest}", every: time.Second, strictSim: true, wantRefusals: true},
	} {
		t.Run(fmt.Sprintf("extra=%q/strict_sim=%v", c.extra, c.strictSim), func(t *testing.T) {
			start := time.Unix(1_700_000_000, 0)
			clock := trackerhttptest.NewClock(start)
			sim := trackersim.New(trackersim.Options{Tokens: []string{"pace-token"}, Clock: clock.Now, GitHubSecondaryLimits: true, GitHubLabelsAsContent: c.strictSim})
			t.Cleanup(sim.Close)
			srv := httptest.NewServer(sim.Handler())
			t.Cleanup(srv.Close)
			cfg, err := config.Parse([]byte(fmt.Sprintf("redis: {addr: %q}\nprojects:\n  - name: app\n    %s\n    polling: {enabled: true}\n    pipeline: {command: [run]}%s\n",
				"127.0.0.1:1", simcases.GitHub.Project(srv.URL, "PACE_TOKEN", "    "), c.extra)),
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
				clock.Advance(c.every)
			}
			refused := sim.Stats().SecondaryRefused
			switch took := clock.Now().Sub(start); {
			case c.wantRefusals && refused == 0:
				t.Error("no refusal: the sim does not enforce the limit this case is about")
			case c.wantRefusals:
			case refused != 0 || failed != 0:
				t.Errorf("paced: %d secondary-limit refusals, %d failed claims; want none", refused, failed)
			case took < c.minTook:
				t.Errorf("200 writes took %v of GitHub time, want at least %v: not paced", took, c.minTook)
			}
		})
	}
}
