package runstate

import "github.com/agentsmithd/agentsmithd/pkg/keys"

// DiagnosticKeys names, for a reader that only looks (the chaos harness's
// diagnosis of a lost ticket), where the run state of the ticket keyed k
// lives: strings holds the per-ticket string keys (run lock, cancel
// request, finished mark) and hashes the shared hashes whose field k is
// the ticket's (in-flight index, attempts, waiting outcomes). Writes stay
// with this package's scripts.
func DiagnosticKeys(k string) (strings, hashes []string) {
	return []string{keys.Heartbeat(k), keys.Cancel(k), keys.Finished(k)},
		[]string{keys.Inflight(), keys.Attempts(), keys.Outcomes()}
}
