// Package claim is the claim role (the TicketClaimService owner in the
// transition table): it moves a triggered Pending ticket to Enqueued and
// pushes exactly one PipelineRequest per trigger, under the ticket's claim
// lock. The receiver, the poller and housekeeping's sweeps all claim
// through Service. claim.go is the protocol (lock, read, pre-checks, the
// gates that ask the tracker, relabel, push); trigger.go gates who may
// start runs, readiness.go open blockers, triggered.go claims a listing;
// giveup.go fails a ticket whose attempts are used up, retry.go runs a
// Failed ticket again, command.go carries out comment commands and
// requeue.go re-pushes a lost request. It imports lifecycle for the states,
// the transition table, the label writes and the attempt numbering;
// lifecycle imports no role.
package claim
