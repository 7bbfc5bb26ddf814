// Package runstate owns the Redis state of a ticket's run: the run lock
// (the heartbeat key), the in-flight index, the attempt counts, the
// finished marker, the cancel request, the concurrency slots and the run
// logs index. Every read and write of those keys, and every Lua script that
// touches them, is here, each script with its KEYS, ARGV and return values
// written down, so the rules that keep one run per ticket (who may renew,
// who may release, what a terminal release forgets) have one owner, as
// hibiken/asynq's internal/rdb has for its keys.
//
// The key names themselves are built in pkg/keys, with every other key of
// the daemon; this package is the only one that calls the run-state
// builders (ownership_test.go fails the build's tests otherwise). The
// lifecycle (claim, executor), housekeeping, the operator actions
// (lifecycle/ops), metrics and the CLIs go through the functions here.
//
// What the values mean (which attempt comes next, when attempts are used
// up, which cancel cause is honoured) is the lifecycle's business; this
// package only stores them. It knows tickets only as platforms.Ref and
// imports nothing of lifecycle, so lifecycle can import it.
//
// # Keys
//
//	heartbeat:{ticket}      string, owner token, TTL keys.HeartbeatTTL: the run lock and liveness
//	inflight                hash, ticket key → Record JSON: every running pipeline
//	attempts                hash, ticket key → last attempt taken
//	finished:{ticket}       string "1", TTL keys.FinishedTTL: the last run reached Done or Failed
//	cancel:{ticket}         string, the cause, TTL keys.CancelTTL by default
//	slots:project:{name}    sorted set, run token scored by expiry (unix ms)
//	slots:token:{digest}    likewise, shared by every project using one tracker token
//	runlogs:{ticket}        hash, attempt → RunLog JSON, TTL keys.FinishedTTL
//	outcomes                hash, ticket key → Outcome JSON: pipelines ended, Done/Failed not yet written
package runstate
