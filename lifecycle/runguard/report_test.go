package runguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/trust"
)

// runReport runs argv under a guard for token "A", after before (nil:
// nothing) has changed the run in Redis, and returns its result and what
// the guard reported (Wrap's done).
func runReport(t *testing.T, before func(*redis.Client), argv ...string) (procrun.Result, string) {
	t.Helper()
	rdb, l := setup(t)
	if before != nil {
		before(rdb)
	}
	guarded, done, err := l.Wrap(procrun.Spec{Argv: argv, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Output: &syncBuffer{}},
		ref, "A", trust.Fraction(time.Hour, trust.DefaultHeartbeatTrust))
	if err != nil {
		t.Fatal(err)
	}
	res := procrun.Run(t.Context(), guarded)
	return res, done()
}

// A guard that does not start the pipeline says why on its report pipe, so
// the daemon tells its exit 125 from a pipeline's and has the reason even
// when the run's output is lost; a pipeline that exits 125 itself leaves
// the report empty.
func TestGuardReportsWhyItDidNotStartThePipeline(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		res, why := runReport(t, func(rdb *redis.Client) {
			if ok, err := runstate.Evict(t.Context(), rdb, ref, "A"); err != nil || !ok {
				t.Fatalf("evict: %v %v", ok, err)
			}
		}, "/bin/true")
		if res.ExitCode != 125 || !strings.Contains(why, "is no longer this pipeline's") || !strings.HasSuffix(why, "not starting the pipeline") {
			t.Errorf("result %s, report %q: want exit status 125 and why", res.Describe(), why)
		}
	})
	t.Run("pipeline exits 125", func(t *testing.T) {
		res, why := runReport(t, nil, "/bin/sh", "-c", "exit 125")
		if res.ExitCode != 125 || why != "" {
			t.Errorf("result %s, report %q: want the pipeline's exit status 125 and no report", res.Describe(), why)
		}
	})
	t.Run("pipeline holds the report pipe", func(t *testing.T) {
		// A pipeline never inherits the report's write end: were it to,
		// a background child outliving the guard would hold done's read.
		res, why := runReport(t, nil, "/bin/sh", "-c", "[ -e /proc/$$/fd/4 ] && exit 3; exit 0")
		if !res.OK() || why != "" {
			t.Errorf("result %s, report %q: the pipeline saw fd 4", res.Describe(), why)
		}
	})
}
