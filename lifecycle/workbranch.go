package lifecycle

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/gitws"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// GitDir is the daemon's git dir for the ticket's work dir under root:
// <root>-git/<project>/<ticket>, beside the work root rather than in it, so
// that nothing the pipeline can write is read as git metadata
// (pkg/gitws). The daemon makes it 0700; it is kept between attempts on
// this replica, like the work dir, and made again from the remote when
// missing.
func GitDir(root string, ref platforms.Ref) string {
	return filepath.Join(GitRoot(root), ticketRel(ref))
}

// GitRoot is where the daemon keeps the git dirs of the tickets whose work
// dirs are under the work root root, laid out {project}/{ticket} as the
// work root is.
func GitRoot(root string) string { return filepath.Clean(root) + "-git" }

// gitDirs are the ticket's work dir, its git dir and the git root,
// absolute.
func (a *attempt) gitDirs(workDir string) (gitws.Dirs, error) {
	work, err := filepath.Abs(workDir)
	if err != nil {
		return gitws.Dirs{}, err
	}
	git, err := filepath.Abs(GitDir(a.e.cfg.WorkDir, a.req.Ref))
	if err != nil {
		return gitws.Dirs{}, err
	}
	root, err := filepath.Abs(GitRoot(a.e.cfg.WorkDir))
	if err != nil {
		return gitws.Dirs{}, err
	}
	return gitws.Dirs{Work: work, Git: git, Root: root}, nil
}

// prepareWork brings the ticket's work dir to its work branch
// (projects[].workspace.git) before the pipeline starts: the last commit
// pushed by any earlier attempt, on any replica, or a new branch from the
// base. Without a workspace it does nothing. The heartbeat's kill stops git
// as it stops the pipeline.
func (a *attempt) prepareWork(ctx context.Context, workDir string) error {
	ws := a.p.Workspace
	if ws == nil {
		return nil
	}
	branch, err := ws.Branch(a.req.Ref.ID)
	if err != nil {
		return fmt.Errorf("work branch: %w", err)
	}
	dirs, err := a.gitDirs(workDir)
	if err != nil {
		return fmt.Errorf("work branch: %w", err)
	}
	// The pipeline's own repository is made as its user, in its work dir:
	// that user must reach the dir first.
	if err := handOver(a.e.cfg.WorkDir, workDir, a.p.Pipeline.RunAs); err != nil {
		return err
	}
	ctx, stop := a.killable(ctx)
	defer stop()
	p, err := ws.Prepare(ctx, dirs, branch)
	if err != nil {
		return fmt.Errorf("work branch %s: %w", branch, err)
	}
	a.branch = branch
	a.log.Info("work branch ready", zap.String("branch", branch), zap.Bool("resumed", p.Resumed), zap.String("head", p.Head))
	return nil
}

// saveWork commits everything in the work dir and pushes the work branch,
// before the ticket moves on: after a failure, a timeout, a cancellation or
// a shutdown hand-back as "[wip] agent-smith attempt N: <cause>", after a
// success as "agent-smith attempt N: succeeded" (nothing is committed when
// the pipeline already did). It returns the comment's note; a failed save
// is logged and noted, never blocks the transition. A run that lost its
// ownership never gets here: another replica may be working on the branch.
//
// within, when positive, bounds the save below the workspace's own timeout
// (a hand-back on shutdown must not hold the replica for a whole pipeline
// timeout).
func (a *attempt) saveWork(ctx context.Context, workDir string, ok bool, cause string, within time.Duration) []string {
	ws := a.p.Workspace
	if ws == nil || a.branch == "" || (a.hb != nil && a.hb.lostErr() != nil) {
		return nil
	}
	if a.leftover != nil {
		a.log.Error("the work branch is not saved: processes of the run may still be running, and the save would read the work dir they write",
			zap.String("branch", a.branch), zap.Error(a.leftover))
		return []string{fmt.Sprintf("work branch `%s`: **not pushed** (processes of the run could not be ended)", a.branch)}
	}
	msg := fmt.Sprintf("agent-smith attempt %d: succeeded", a.req.Attempt)
	if !ok {
		msg = fmt.Sprintf("[wip] agent-smith attempt %d: %s", a.req.Attempt, cause)
	}
	// A shutdown cancels ctx: the save is what keeps the work then, so it
	// runs on, bounded by the workspace's own timeout.
	ctx = context.WithoutCancel(ctx)
	if within > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, within)
		defer cancel()
	}
	ctx, stop := a.killable(ctx)
	defer stop()
	dirs, err := a.gitDirs(workDir)
	var s gitws.Saved
	if err == nil {
		s, err = ws.Save(ctx, dirs, a.branch, msg)
	}
	if err != nil {
		// git's message quotes paths the pipeline named: a secret may be
		// one of them.
		why := a.p.Redact.String(err.Error())
		a.log.Warn("save the work branch; the transition goes ahead", zap.String("branch", a.branch), zap.String("error", why))
		return []string{fmt.Sprintf("work branch `%s`: **not pushed** (%s)", a.branch, escapeFor(a.p.Redact, a.p.Platform, firstLine(why, 300)))}
	}
	a.pushed = s.Head
	a.log.Info("work branch pushed", zap.String("branch", a.branch), zap.String("head", s.Head), zap.Bool("committed", s.Committed), zap.Int("merged", s.Merged))
	return []string{fmt.Sprintf("work branch `%s`: pushed at %s", a.branch, short(s.Head))}
}

// handBackSaveTimeout bounds the work branch's save when a shutdown hands
// the run back: long enough for a push, short enough that a replica
// shutting down is not held for a pipeline's timeout.
const handBackSaveTimeout = time.Minute

// killable is ctx cancelled also when the run's heartbeat is lost.
func (a *attempt) killable(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if a.hb != nil {
		stop := make(chan struct{})
		go func() {
			select {
			case <-a.hb.kill:
				cancel()
			case <-stop:
			}
		}()
		return ctx, func() { close(stop); cancel() }
	}
	return ctx, cancel
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncateRunes(s, n)
}

// noteLeftover records that a run's cgroup could not be emptied, so that
// saveWork does not act, as the daemon's user, on a work dir processes of
// the run may still write.
func (a *attempt) noteLeftover(res procrun.Result) {
	if res.Leftover == nil {
		return
	}
	a.log.Error("a run cgroup could not be emptied; processes of the run may still be running", zap.Error(res.Leftover))
	if a.leftover == nil {
		a.leftover = res.Leftover
	}
}
