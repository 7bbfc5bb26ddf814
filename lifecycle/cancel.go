package lifecycle

import (
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Cancellation causes. The cause is the value of the ticket's cancel
// request (runstate.RequestCancel) and is quoted in the comment on the Failed
// ticket. A cause derived from the tracker (CauseClosed, CauseUntriggered) is
// a hint: the executor confirms it on a fresh read before it stops anything,
// so a stale webhook cannot cancel a later run. Any other cause (an
// operator's, CtlCause) is honoured as it is.
const (
	// CauseClosed: the ticket was closed while Enqueued or InProgress.
	CauseClosed = "closed by the tracker"
	// CauseUntriggered: the trigger label was removed while Enqueued or
	// InProgress.
	CauseUntriggered = "trigger label removed"
	ctlCausePrefix   = "cancelled by agentsmithctl: "
)

// CtlCause is the cause agentsmithctl writes for an operator's reason.
func CtlCause(reason string) string { return ctlCausePrefix + reason }

// TrackerCause is the cancellation cause a ticket snapshot shows by itself:
// closed, or its trigger label gone. "" when it may keep running.
func TrackerCause(t *platforms.Ticket, trigger string) string {
	switch {
	case !t.Open:
		return CauseClosed
	case !t.HasLabel(trigger):
		return CauseUntriggered
	}
	return ""
}
