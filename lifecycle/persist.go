package lifecycle

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// DefaultPersistTimeout bounds the persist command when the project sets
// no timeout.
const DefaultPersistTimeout = 2 * time.Minute

// persist runs the project's persist command in the ticket's work dir after
// a failed attempt (an operator's hook; the seed's branch persistence is
// built in: workbranch.go), before the retry or the
// Failed label, with the pipeline's environment plus AGENTSMITH_OUTCOME. It
// never blocks the transition: a failure is logged and returned as a note
// for the failure comment. The heartbeat's kill stops it if the run is lost.
func (a *attempt) persist(ctx context.Context, t *platforms.Ticket, kind failureKind) []string {
	e, p, req, token, hb, log := a.e, a.p, a.req, a.token, a.hb, a.log
	if len(p.Pipeline.PersistCommand) == 0 {
		return nil
	}
	workDir := WorkDir(e.cfg.WorkDir, req.Ref)
	if _, err := os.Stat(workDir); err != nil {
		log.Warn("persist command not run: no work dir", zap.Error(err))
		return []string{"persist command: not run (no work dir)"}
	}
	spec := pipelineSpec(p, t, req.Attempt, workDir)
	spec.Argv = p.Pipeline.PersistCommand
	spec.Env = append(spec.Env, "AGENTSMITH_RUN_TOKEN="+token, "AGENTSMITH_OUTCOME="+kind.outcome())
	spec.Timeout = p.Pipeline.PersistTimeout
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultPersistTimeout
	}
	spec.Grace = e.cfg.KillGrace
	spec.TailBytes = e.cfg.TailBytes
	spec.Kill = hb.kill
	spec.Cgroups = e.cfg.Cgroups
	// Its output is redacted like the pipeline's: the tail is logged.
	red := a.redactOutput(nil)
	spec.Output = red
	res := procrun.Run(ctx, spec)
	a.noteLeftover(res)
	res.Tail = red.finish()
	if res.OK() {
		log.Info("persist command succeeded", zap.Duration("duration", res.Duration))
		return []string{"persist command: succeeded"}
	}
	tail := strings.TrimSpace(strings.ToValidUTF8(string(res.Tail), "\uFFFD"))
	log.Warn("persist command failed; the transition goes ahead", zap.String("result", res.Describe()), zap.String("outputTail", tail))
	return []string{fmt.Sprintf("persist command: **failed** (%s); the work may not have been saved", res.Describe())}
}
