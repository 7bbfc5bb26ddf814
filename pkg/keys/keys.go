// Package keys builds every Redis key the daemon uses. Nothing else formats
// an "agentsmith:" key, so the key layout can be read (and changed) in one
// place. The names and TTL defaults are the specification's; where the
// specification says {ticketId} this package takes the ticket key
// "{platform}:{id}" because ticket ids are only unique within a platform.
package keys

import "time"

// Prefix starts every key.
const Prefix = "agentsmith:"

// Specification defaults for the TTLs attached to the keys below.
const (
	ClaimLockTTL     = 30 * time.Second // agentsmith:claim-lock:*
	HeartbeatTTL     = 2 * time.Minute  // agentsmith:heartbeat:*
	HeartbeatRenew   = 30 * time.Second
	JiraLabelLockTTL = 10 * time.Second // agentsmith:jira-label-lock:*
	DeliveryTTL      = 24 * time.Hour   // agentsmith:delivery:*
	CancelTTL        = time.Hour        // agentsmith:cancel:*: outlives any queue wait worth honouring
	StuckFlagTTL     = 7 * 24 * time.Hour
)

// ClaimLock is the SET NX mutex around a claim's read → transition window.
func ClaimLock(platform, id string) string { return Prefix + "claim-lock:" + platform + ":" + id }

// Heartbeat is the liveness (and run ownership) key of a running pipeline.
func Heartbeat(ticketKey string) string { return Prefix + "heartbeat:" + ticketKey }

// JiraLabelLock wraps Jira's unconditional label PUT.
func JiraLabelLock(ticketKey string) string { return Prefix + "jira-label-lock:" + ticketKey }

// Queue is the job list: RPUSH in, FIFO out.
func Queue() string { return Prefix + "queue:jobs" }

// Processing is one instance's list of taken, not yet started requests.
func Processing(instance string) string { return Prefix + "queue:processing:" + instance }

// ProcessingPattern matches every instance's processing list (for SCAN).
func ProcessingPattern() string { return Prefix + "queue:processing:*" }

// ProcessingInstance extracts the instance id from a Processing key.
func ProcessingInstance(key string) string { return key[len(Prefix+"queue:processing:"):] }

// Leader is a leader lease: "poller" or "housekeeping".
func Leader(role string) string { return Prefix + "leader:" + role }

// Inflight is the hash ticket key → run owner record of running pipelines.
func Inflight() string { return Prefix + "inflight" }

// Instance is a replica's liveness key (short TTL, renewed continuously).
func Instance(id string) string { return Prefix + "instance:" + id }

// InstancePattern matches every instance liveness key (for SCAN).
func InstancePattern() string { return Prefix + "instance:*" }

// Epoch marks a Redis dataset; its absence after a reconnect means Redis
// lost its data and the trackers must be reconciled at once.
func Epoch() string { return Prefix + "epoch" }

// Delivery remembers a webhook delivery id for de-duplication.
func Delivery(platform, id string) string { return Prefix + "delivery:" + platform + ":" + id }

// Attempts counts pipeline attempts per ticket across reverts.
func Attempts() string { return Prefix + "attempts" }

// Cancel asks the run of a ticket to stop (agentsmithctl cancel, or a
// cancellation seen by the receiver); the value says why. Whoever owns the
// ticket's run or request honours it.
func Cancel(ticketKey string) string { return Prefix + "cancel:" + ticketKey }

// Blocked is the set of ticket keys of one project whose last claim found
// open blockers; a close event or a slow housekeeping cycle claims them
// again, so a ticket is claimed when its last blocker closes.
func Blocked(project string) string { return Prefix + "blocked:" + project }

// StuckFlag remembers that a ticket was flagged stuck in one state (value:
// the run or request it was flagged for), so it is commented on at most once
// per state.
func StuckFlag(ticketKey, state string) string { return Prefix + "stuck:" + state + ":" + ticketKey }

// Audit is the capped stream of every transition and repair.
func Audit() string { return Prefix + "audit" }

// Delayed is the sorted set of requests waiting out a retry backoff, scored
// by the unix milliseconds at which they are due.
func Delayed() string { return Prefix + "queue:delayed" }
