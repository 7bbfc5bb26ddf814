package lifecycle

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/redislock"
)

// Outcome is how a claim ended. Only Claimed enqueues a request.
type Outcome string

const (
	Claimed            Outcome = "claimed"
	AlreadyClaimed     Outcome = "already_claimed"
	NotEligible        Outcome = "not_eligible"
	PreconditionFailed Outcome = "precondition_failed"
)

// Holder describes the owner of a claim lock or a run, decoded from the
// lock's token so contention can name who is in the way.
type Holder struct {
	Instance string    `json:"instance"`
	Source   string    `json:"source"`
	Since    time.Time `json:"since"`
}

// OwnerToken builds a lock value that identifies its holder. The random part
// makes it unique, so a CAS release can never free someone else's lock.
func OwnerToken(instance, source string, now time.Time) string {
	return instance + "|" + source + "|" + strconv.FormatInt(now.UnixMilli(), 10) + "|" + redislock.NewToken()
}

// ParseOwnerToken is OwnerToken's inverse; unknown formats give an empty
// Holder rather than an error, since the token is only informative here.
func ParseOwnerToken(token string) *Holder {
	parts := strings.Split(token, "|")
	if len(parts) != 4 {
		return &Holder{Instance: token}
	}
	ms, _ := strconv.ParseInt(parts[2], 10, 64)
	return &Holder{Instance: parts[0], Source: parts[1], Since: time.UnixMilli(ms).UTC()}
}
