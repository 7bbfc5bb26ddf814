package daemon_test

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// With reactions: true a claimed ticket gets one "eyes" reaction from the
// bot, through the platform's real SDK, and still runs to Done.
func TestReactionOnClaim(t *testing.T) {
	for _, pc := range []simcases.Case{simcases.GitHub, simcases.GitLab} {
		t.Run(pc.Name, func(t *testing.T) {
			e := newEnvFor(t, pc)
			cfg := e.config("replica-a", "")
			cfg.Projects[0].Reactions = true
			e.startDaemon(cfg)
			n := e.sim.CreateIssue(e.repo, "React to me", "", "agent-smith")
			e.waitState(n, 20*time.Second, lifecycle.Done)
			got := e.sim.Reactions(e.repo, n)
			if len(got) != 1 || got[0].Content != platforms.ReactionEyes {
				t.Errorf("reactions = %+v, want one %q", got, platforms.ReactionEyes)
			}
		})
	}
}
