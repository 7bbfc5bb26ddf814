package receiver

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// OutcomeCommand answers a delivery of a comment command: it is carried out
// in the background.
const OutcomeCommand = "command_accepted"

// commandTimeout bounds one comment command (a permission lookup, a
// tracker read and write, a reply).
const commandTimeout = time.Minute

// runCommand carries out a comment command in the background, so the
// delivery is answered at once (GitHub gives a webhook 10 s). A command
// that fails (tracker or Redis unreachable) is logged; its author can
// comment again.
func (rc *Receiver) runCommand(ref platforms.Ref, actor, command string, log *zap.Logger) {
	rc.bg.Go(func() {
		ctx, cancel := context.WithTimeout(rc.bgCtx, commandTimeout)
		defer cancel()
		if _, err := rc.claims.RunCommand(ctx, ref, actor, command); err != nil {
			log.Warn("comment command failed", zap.String("ticketId", ref.ID), zap.String("command", command), zap.Error(err))
		}
	})
}
