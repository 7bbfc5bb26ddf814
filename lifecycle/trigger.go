package lifecycle

import (
	"strings"
)

// TriggerAllow says who may start a project's runs by adding the trigger
// label (config trigger.allow). The zero value admits anyone; the daemon
// always sets it from its config, whose default is write access.
type TriggerAllow struct {
	// Write admits anyone the project's tracker reports write access for
	// (platforms.PermissionChecker); a tracker without that capability
	// admits nobody this way.
	Write bool
	// Users are admitted by name, as platforms.WebhookEvent.Actor names
	// them (compared case-insensitively, as the trackers resolve names).
	Users []string
	// Teams admit members of these teams or groups, as
	// platforms.TeamChecker names them; a tracker without that capability
	// admits nobody this way (config validation refuses teams for it).
	Teams []string
}

// Gated reports whether anything is checked at all: an ungated project
// admits whoever triggers it.
func (a TriggerAllow) Gated() bool { return a.Write || len(a.Users) > 0 || len(a.Teams) > 0 }

// Listed reports whether actor is one of Users.
func (a TriggerAllow) Listed(actor string) bool {
	for _, u := range a.Users {
		if strings.EqualFold(strings.TrimSpace(u), actor) {
			return true
		}
	}
	return false
}
