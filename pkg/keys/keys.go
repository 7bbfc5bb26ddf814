// Package keys builds every Redis key the daemon uses. Nothing else formats
// an "agentsmith:" key, so the key layout can be read (and changed) in one
// place. The names and TTL defaults are the specification's; where the
// specification says {ticketId} this package takes the ticket key
// "{platform}:{id}" because ticket ids are only unique within a platform.
//
// # Redis Cluster
//
// On a Redis Cluster every multi-key operation (the run lock's Lua scripts,
// BLMOVE from the queue into a processing list, the requeue script) must
// touch keys of one hash slot. Rather than reason about each operation, the
// daemon puts all of its keys into one slot, as BullMQ does: UseHashTag(true)
// makes the prefix "{agentsmith}:", a hash tag, so every key hashes like
// "agentsmith". The daemon's keyspace is small (a few keys per ticket in
// flight), so one shard holds it easily.
//
// The mode is process-wide and fixed at the first key built: the daemon sets
// it once at start-up from its config, before anything runs. A package
// variable, not a value threaded through every caller, because a process
// talks to exactly one Redis deployment; freezing it on first use turns a
// late or conflicting switch into an error instead of keys that silently
// change name under running loops. Tests of cluster mode therefore live in
// their own test binary (package), which sets it in TestMain.
package keys

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"
)

// Prefix starts every key outside cluster mode: the specification's names.
const Prefix = "agentsmith:"

// TaggedPrefix starts every key in cluster mode: the hash tag {agentsmith}
// puts all keys into one hash slot.
const TaggedPrefix = "{agentsmith}:"

// Prefix modes; the zero value means "not decided yet".
const (
	modeUnset int32 = iota
	modePlain
	modeTagged
)

var mode atomic.Int32

// ErrModeFixed is returned by UseHashTag once keys were built in the other
// mode.
var ErrModeFixed = errors.New("keys: hash tag mode already fixed by an earlier call or the first key built")

// UseHashTag selects the cluster-mode prefix (on) or the specification's
// (off) for the whole process. It may be called any number of times with
// the same value; the first key built, or the first call, fixes the mode and
// a different value afterwards is ErrModeFixed.
func UseHashTag(on bool) error {
	want := modePlain
	if on {
		want = modeTagged
	}
	if mode.CompareAndSwap(modeUnset, want) || mode.Load() == want {
		return nil
	}
	return ErrModeFixed
}

// HashTagged reports whether keys carry the cluster hash tag.
func HashTagged() bool { return prefix() == TaggedPrefix }

// prefix returns the prefix in force, fixing the mode on first use.
func prefix() string {
	mode.CompareAndSwap(modeUnset, modePlain)
	if mode.Load() == modeTagged {
		return TaggedPrefix
	}
	return Prefix
}

// Specification defaults for the TTLs attached to the keys below.
const (
	ClaimLockTTL     = 30 * time.Second // agentsmith:claim-lock:*
	HeartbeatTTL     = 2 * time.Minute  // agentsmith:heartbeat:*
	HeartbeatRenew   = 30 * time.Second
	JiraLabelLockTTL = 10 * time.Second // agentsmith:jira-label-lock:*
	DeliveryTTL      = 24 * time.Hour   // agentsmith:delivery:*
	// FinishedTTL is how long a ticket's terminal state is remembered, so
	// that a claim within it counts as a re-trigger (flow metrics).
	FinishedTTL = 30 * 24 * time.Hour // agentsmith:finished:*
	CancelTTL   = time.Hour           // agentsmith:cancel:*: outlives any queue wait worth honouring
	// CancelToldTTL bounds agentsmith:cancel-told:* of a request nobody
	// ends: every end of the request deletes it sooner.
	CancelToldTTL = 24 * time.Hour
	// ClaimFreshTTL bounds agentsmith:claim-fresh:* of a claim's request
	// nobody took: past it the take reads the ticket, which is only a call
	// more.
	ClaimFreshTTL = time.Hour
	StuckFlagTTL  = 7 * 24 * time.Hour
	// StageResultTTL keeps a stage's result for the next stage of its
	// ticket (agentsmith:stage-result:*); every stage's end writes it anew.
	StageResultTTL = 7 * 24 * time.Hour
	// SentBackTTL bounds a ticket's send-back counts
	// (agentsmith:sent-back:*); every send-back renews it, and a fresh
	// trigger's claim deletes it.
	SentBackTTL = 7 * 24 * time.Hour
	// TriggerPermissionTTL is how long a tracker's answer to "may this user
	// write?" is trusted: minutes, so a revoked collaborator stops
	// triggering soon and a burst of triggers costs one lookup.
	TriggerPermissionTTL = 5 * time.Minute // agentsmith:trigger-permission:*, agentsmith:trigger-team:*
	// TriggerActorTTL keeps who last added a ticket's trigger label (from
	// a webhook or the ticket's history) for claims that do not know:
	// minutes, so a later trigger whose webhook was lost is read from the
	// history soon. TriggerRefusalTTL keeps the one comment per refused
	// actor and ticket.
	TriggerActorTTL   = 5 * time.Minute     // agentsmith:trigger-actor:*
	TriggerRefusalTTL = 30 * 24 * time.Hour // agentsmith:trigger-refusal:*
	// TrackerRefusalTTL keeps a ticket's record of a tracker's refusal for
	// good (its backoff and whether the ticket was told) this long after
	// the last refusal: the ticket is told once per cause within it.
	TrackerRefusalTTL = 30 * 24 * time.Hour // agentsmith:tracker-refusal:*
	// WebhookAuthTTL keeps a project's record of authenticated and
	// rejected deliveries this long after the last one: long enough that
	// `check --webhook` reports a quiet project's last delivery.
	WebhookAuthTTL = 14 * 24 * time.Hour // agentsmith:webhook-auth:*
)

// ClaimLock is the SET NX mutex around a claim's read → transition window.
func ClaimLock(platform, id string) string { return prefix() + "claim-lock:" + platform + ":" + id }

// Heartbeat is the liveness (and run ownership) key of a running pipeline.
func Heartbeat(ticketKey string) string { return prefix() + "heartbeat:" + ticketKey }

// JiraLabelLock wraps Jira's unconditional label PUT.
func JiraLabelLock(ticketKey string) string { return prefix() + "jira-label-lock:" + ticketKey }

// Queue is the job list: RPUSH in, FIFO out.
func Queue() string { return prefix() + "queue:jobs" }

// QueueLevel is the job list of one priority level other than the default
// (lower numbers are served first). The default level stays Queue(), so a
// deployment without priorities keeps the specification's key.
func QueueLevel(priority int) string {
	return prefix() + "queue:jobs:priority:" + strconv.Itoa(priority)
}

// QueueLevelPattern matches every non-default level's list (for SCAN, by
// tools that do not know the configured levels).
func QueueLevelPattern() string { return prefix() + "queue:jobs:priority:*" }

// PoolQueue is the job list of one pool other than the default pool
// (whose list stays Queue(), so a deployment without pools keeps the
// specification's keys): only replicas of the pool take from it. pool is
// a validated pool name ([a-z][a-z0-9-]*), never ticket text.
func PoolQueue(pool string) string { return prefix() + "queue:pool:" + pool + ":jobs" }

// PoolQueueLevel is PoolQueue for one priority level other than the
// default.
func PoolQueueLevel(pool string, priority int) string {
	return PoolQueue(pool) + ":priority:" + strconv.Itoa(priority)
}

// Processing is one instance's list of taken, not yet started requests.
func Processing(instance string) string { return prefix() + "queue:processing:" + instance }

// ProcessingPattern matches every instance's processing list (for SCAN).
func ProcessingPattern() string { return prefix() + "queue:processing:*" }

// ProcessingInstance extracts the instance id from a Processing key.
func ProcessingInstance(key string) string { return key[len(prefix()+"queue:processing:"):] }

// The roles that run on one replica at a time, each under its leader lease
// (Leader). They are also the role names of the config (config.RolePoller,
// config.RoleHousekeeping).
const (
	LeaderPoller       = "poller"
	LeaderHousekeeping = "housekeeping"
)

// LeaderRoles lists the leader roles, for a reader of every lease.
var LeaderRoles = []string{LeaderPoller, LeaderHousekeeping}

// Leader is a leader lease: LeaderPoller or LeaderHousekeeping.
func Leader(role string) string { return prefix() + "leader:" + role }

// Inflight is the hash ticket key → run owner record of running pipelines.
func Inflight() string { return prefix() + "inflight" }

// Outcomes is the hash ticket key → outcome record (runstate.Outcome) of
// every run whose pipeline ended but whose Done or Failed is not yet on the
// tracker: the record the final write is made from, by the run or by
// whoever finishes it after the run gave up or died, so a tracker outage
// at the end of a run costs neither its outcome nor a second run of its
// pipeline, as long as Redis keeps this hash (persistence: AOF): one lost
// while the run still writes is recorded again by the run; one lost after
// the run handed it over is gone, and the ticket is reverted and run again.
func Outcomes() string { return prefix() + "outcomes" }

// Instance is a replica's liveness key (short TTL, renewed continuously).
func Instance(id string) string { return prefix() + "instance:" + id }

// InstancePattern matches every instance liveness key (for SCAN).
func InstancePattern() string { return prefix() + "instance:*" }

// Epoch marks a Redis dataset; its absence after a reconnect means Redis
// lost its data and the trackers must be reconciled at once.
func Epoch() string { return prefix() + "epoch" }

// Delivery remembers a webhook delivery id for de-duplication.
func Delivery(platform, id string) string { return prefix() + "delivery:" + platform + ":" + id }

// WebhookAuth is one project's record of the webhook deliveries its route
// authenticated or rejected (counts, last time, last reason; never a
// secret or a body). project "" is the platform's deliveries the receiver
// could not attribute to one project. It expires WebhookAuthTTL after the
// last delivery.
func WebhookAuth(platform, project string) string {
	return prefix() + "webhook-auth:" + platform + ":" + project
}

// DeliveryBody remembers the digest of a webhook delivery's signed body: the
// delivery id header is not signed, so a replay under a fresh id is caught
// by its body.
func DeliveryBody(platform, digest string) string {
	return prefix() + "delivery-body:" + platform + ":" + digest
}

// Attempts counts pipeline attempts per ticket across reverts.
func Attempts() string { return prefix() + "attempts" }

// Cancel asks the run of a ticket to stop (agentsmithctl cancel, or a
// cancellation seen by the receiver); the value says why. Whoever owns the
// ticket's run or request honours it.
func Cancel(ticketKey string) string { return prefix() + "cancel:" + ticketKey }

// CancelTold marks that the ticket was told of its cancellation: the
// consumer sets it once the comment is posted, so a cancel request
// honoured again (its Failed write did not land) is not told twice. It goes with the cancel request (runstate.Release, StartOver,
// History, ClearCancel).
func CancelTold(ticketKey string) string { return prefix() + "cancel-told:" + ticketKey }

// ClaimFresh holds the id of the request a claim just pushed for the
// ticket. The first take of that request deletes it and may start from the
// claim's write answer (PipelineRequest.Observed) instead of reading the
// ticket; any other copy finds it gone and reads the ticket.
func ClaimFresh(ticketKey string) string { return prefix() + "claim-fresh:" + ticketKey }

// Blocked is the set of ticket keys of one project whose last claim found
// open blockers; a close event or a slow housekeeping cycle claims them
// again, so a ticket is claimed when its last blocker closes.
func Blocked(project string) string { return prefix() + "blocked:" + project }

// StuckFlag remembers that a ticket was flagged stuck in one state (value:
// the run or request it was flagged for), so it is commented on at most once
// per state.
func StuckFlag(ticketKey, state string) string { return prefix() + "stuck:" + state + ":" + ticketKey }

// Audit is the capped stream of every transition and repair.
func Audit() string { return prefix() + "audit" }

// Delayed is the sorted set of requests waiting out a retry backoff, scored
// by the unix milliseconds at which they are due.
func Delayed() string { return prefix() + "queue:delayed" }

// StageResult is the result the last finished stage of a ticket wrote
// ($AGENTSMITH_RESULT_FILE, bounded), JSON {stage, result}: the next stage
// gets it as $AGENTSMITH_PREVIOUS_RESULT. It expires after StageResultTTL.
func StageResult(ticketKey string) string { return prefix() + "stage-result:" + ticketKey }

// SentBack counts, per stage (hash field: the stage's name), how often a
// ticket's stage failed and sent it back to an earlier stage
// (on_failure.back_to), for that stage's on_failure.max. It expires after
// SentBackTTL.
func SentBack(ticketKey string) string { return prefix() + "sent-back:" + ticketKey }

// Finished marks a ticket whose last run reached Done or Failed; a new claim
// of it is a re-trigger. It expires after FinishedTTL.
func Finished(ticketKey string) string { return prefix() + "finished:" + ticketKey }

// Paused marks a project whose queue is paused (agentsmithctl pause, the
// status page): consumers put its requests aside instead of starting runs.
// The value says who paused it and when.
func Paused(project string) string { return prefix() + "paused:" + project }

// PausedPattern matches every project's pause key (for SCAN).
func PausedPattern() string { return prefix() + "paused:*" }

// PausedProject extracts the project name from a Paused key.
func PausedProject(key string) string { return key[len(prefix()+"paused:"):] }

// ProjectSlots is the concurrency semaphore of one project: a sorted set of
// run tokens scored by the unix milliseconds at which they expire.
func ProjectSlots(project string) string { return prefix() + "slots:project:" + project }

// TokenSlots is the concurrency semaphore shared by every project using one
// tracker token. tokenID is a digest of the token, never the token itself.
func TokenSlots(tokenID string) string { return prefix() + "slots:token:" + tokenID }

// RateBudget is the rate-limit quota one tracker token has left, shared by
// every replica (pkg/budget): a hash of remaining, limit, reset and hold.
// id is trackerhttp.SharedKey, a digest; never the token.
func RateBudget(id string) string { return prefix() + "budget:" + id }

// RatePace is one tracker token's recent usage of one secondary limit,
// shared by every replica (pkg/budget): a sorted set of "cost:id" members
// scored by unix milliseconds. id is trackerhttp.SharedKey, a digest.
func RatePace(id string) string { return prefix() + "pace:" + id }

// Discovery is the counter a repository webhook (GitHub repository,
// installation_repositories) increments: every replica reads it every
// discovery.signal_check and lists its discovered repositories again when
// it moved, so one delivery reaching one replica reaches them all.
func Discovery() string { return prefix() + "discovery:generation" }

// RunLogs is a hash of the ticket's attempts' log files: attempt number
// (run 1) or "{run}-{attempt}" (a later run, after an operator's retry) →
// JSON {run, attempt, instance, path, started}. The file lives on the replica that ran the
// attempt; agentsmithctl logs reads it there. It expires after FinishedTTL
// (renewed by each attempt), like the ticket's other history.
func RunLogs(ticketKey string) string { return prefix() + "runlogs:" + ticketKey }

// TriggerPermission caches whether one user may trigger runs of a project
// (the tracker's write access). actorDigest is a digest of the user name,
// so user names never appear in key listings.
func TriggerPermission(project, actorDigest string) string {
	return prefix() + "trigger-permission:" + project + ":" + actorDigest
}

// TriggerPermissionIn is TriggerPermission for a project whose tickets
// live in several permission schemes (a Jira JQL scope): scope names the
// one asked ("PAY", the Jira project key of PAY-12). "@" cannot occur in a
// project name, so the two never share a key.
func TriggerPermissionIn(project, scope, actorDigest string) string {
	return prefix() + "trigger-permission:" + project + "@" + scope + ":" + actorDigest
}

// TriggerTeam caches whether one user is a member of one team or group
// listed in a project's trigger.allow.teams, for TriggerPermissionTTL.
// Both are digests, so neither names appears in key listings.
func TriggerTeam(project, teamDigest, actorDigest string) string {
	return prefix() + "trigger-team:" + project + ":" + teamDigest + ":" + actorDigest
}

// TriggerActor remembers who last added the trigger label to a ticket, as a
// webhook or the ticket's history named them, until a claim runs it: a
// claim that does not know the actor (polling, the TriggerSweeper) gates
// on this one.
func TriggerActor(ticketKey string) string { return prefix() + "trigger-actor:" + ticketKey }

// TriggerRefusal marks that a refused actor was told so on the ticket, so
// each actor gets one comment per ticket however often they re-label it.
func TriggerRefusal(ticketKey, actorDigest string) string {
	return prefix() + "trigger-refusal:" + ticketKey + ":" + actorDigest
}

// TrackerRefusal is a ticket's record of the tracker refusing the daemon's
// write for good (lifecycle.Refusals): the ticket as it was refused, when
// to try again, and whether the ticket was told.
func TrackerRefusal(ticketKey string) string { return prefix() + "tracker-refusal:" + ticketKey }

// TrackerRefusals indexes the tickets with a TrackerRefusal record: a
// sorted set of ticket keys scored by the end of their backoff (Unix
// seconds), kept by lifecycle.Refusals beside each record, so the status
// page and agentsmithctl list them without a SCAN over the keyspace.
func TrackerRefusals() string { return prefix() + "tracker-refusals" }

// CommandReplies counts the daemon's replies to comment commands on one
// ticket within CommandReplyWindow (INCR, expiry set by the first), so
// nobody can make the daemon post unbounded comments by commenting.
func CommandReplies(ticketKey string) string { return prefix() + "command-replies:" + ticketKey }

// RunTrigger is who triggered a ticket's run, as the claim that ran it
// learned (a webhook or the ticket's history), kept for the run's life
// across its stages (GateTTL): an approval gate with distinct_from_trigger
// refuses that person.
func RunTrigger(ticketKey string) string { return prefix() + "run-trigger:" + ticketKey }

// GateDecision is an approval gate's decision recorded before its label
// write (JSON: approve or reject, who, why, the stage), so a crash between
// loses no decision: the next decision or the gate's repair finishes it.
// A decision on a ticket whose run is still parking it past the gate's
// wait is only recorded here, and the GateKeeper carries it out.
func GateDecision(ticketKey string) string { return prefix() + "gate-decision:" + ticketKey }

// GateRejections counts the rejections of a ticket's gates, a hash of
// gated stage → rejections whose move landed; the one past that gate's
// max_rejections fails the ticket. Its claim starts it over.
func GateRejections(ticketKey string) string { return prefix() + "gate-rejections:" + ticketKey }

// Review is the reviewer's text of a ticket's last rejection, which the
// stage it sends the ticket back to gets as $AGENTSMITH_REVIEW (GateTTL).
func Review(ticketKey string) string { return prefix() + "review:" + ticketKey }

// GateParked is when a ticket was parked in AwaitingApproval (RFC 3339),
// written by the executor as it parks the ticket: a gate's deadline counts
// from it (GateTTL).
func GateParked(ticketKey string) string { return prefix() + "gate-parked:" + ticketKey }

// GateTimer is a timer gate's wait (JSON: the gated stage and when it
// starts), written by the run before the label write that enqueues the
// stage: the EnqueuedReconciler's re-push of a request lost after that
// write waits until then too (GateTTL past its start).
func GateTimer(ticketKey string) string { return prefix() + "gate-timer:" + ticketKey }

// Parked indexes the tickets parked in AwaitingApproval: a sorted set of
// ticket keys scored by when each was parked (Unix ms), beside ParkedInfo,
// kept by lifecycle.Park and lifecycle.Unpark (the executor as it parks, the
// ApprovalGate as it decides; the GateKeeper mends it from the tracker's
// listing), so the status page, agentsmithctl and the metrics list parked
// tickets without a tracker call or a SCAN, and the GateKeeper finds a
// parked ticket that was closed, which no open-ticket listing shows.
func Parked() string { return prefix() + "parked" }

// ParkedInfo is a hash of the tickets in Parked, by ticket key: what each
// awaits (lifecycle.ParkedEntry, JSON).
func ParkedInfo() string { return prefix() + "parked-info" }

// GateEscalated is the GateParked value a timed-out gate escalated for:
// one escalation per parking (GateTTL).
func GateEscalated(ticketKey string) string { return prefix() + "gate-escalated:" + ticketKey }

// GateTTL keeps RunTrigger, GateDecision, GateRejections and Review: as
// long as a stage's result, since a ticket may wait for its approval that
// long.
const GateTTL = StageResultTTL

// CommandReplyWindow is the window of CommandReplies.
const CommandReplyWindow = 10 * time.Minute
