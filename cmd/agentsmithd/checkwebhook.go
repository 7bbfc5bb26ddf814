package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// check --webhook proves the webhook path end to end where the tracker
// can: it asks the tracker for a test delivery to the project's hook that
// points at this receiver (platforms.WebhookTester), then reads what the
// running daemon's receiver recorded of it in Redis (receiver.AuthRecord):
// received and authenticated, not authenticated with rejections seen
// (and which secret to fix), or never received (the URL is not reachable
// from the tracker). Only an authenticated delivery can be told to come
// from the tracker: anyone who reaches the receiver can send one with a
// bad signature. So the verdict rests on whether an authenticated delivery
// arrived after the test was asked for, and rejections seen meanwhile are
// reported beside it as "could be anyone", never as the verdict. Where the
// tracker cannot send one (Jira), it reports the last delivery the
// receiver recorded instead, and says what that does not prove.

// defaultWebhookWait is how long check --webhook waits for the receiver to
// record the test delivery: GitHub and Azure DevOps send it moments after
// the API call returns.
const defaultWebhookWait = 20 * time.Second

// syncWebhookWait is the wait after a tracker that sends the test while its
// API call waits (GitLab): the receiver wrote its record before it
// answered, so only a moment is left for Redis.
const syncWebhookWait = 2 * time.Second

// webhookPoll is how often the record is read while waiting.
const webhookPoll = 100 * time.Millisecond

// webhookCheckName is the row check --webhook adds to each project.
const webhookCheckName = "webhook delivery"

// checkWebhook is one project's "webhook delivery" row.
func checkWebhook(ctx context.Context, cfg *config.Config, pc *config.Project, rdb redis.UniversalClient, receiverURL string, wait time.Duration) platforms.CheckResult {
	if len(pc.Webhook.Secrets) == 0 {
		return platforms.OK(webhookCheckName, "skipped: no webhook secret configured (polling only)")
	}
	var sources []string
	for _, s := range pc.Webhook.Secrets {
		sources = append(sources, s.String())
	}
	if rdb == nil {
		return platforms.Fail(webhookCheckName, "the receiver's record is in Redis, which is not reachable", "fix the redis row first")
	}
	before, err := readRecords(ctx, rdb, pc)
	if err != nil {
		return platforms.Fail(webhookCheckName, "read the receiver's record: "+err.Error(), "fix the redis row first")
	}
	tr, _, _, err := projects.Tracker(pc, rdb, nil, cfg.TrackerWriter(cfg.InstanceID), cfg.LabelPrefix, nil)
	if err != nil {
		return platforms.Fail(webhookCheckName, err.Error(), "fix the project's settings (see `agentsmithd validate`)")
	}
	tester, ok := tr.(platforms.WebhookTester)
	if !ok {
		return lastDelivery(before.project, pc.Platform, sources, wallclock.Now())
	}
	test, res := tester.TestWebhook(ctx, platforms.CheckOptions{ReceiverURL: receiverURL, Webhooks: true})
	if res.Status != platforms.CheckOK {
		return res
	}
	if test.Answer != "" {
		wait = min(wait, syncWebhookWait)
	}
	sent := "sent (" + strings.Join(test.Sent, "; ") + ")"
	if test.Answer != "" {
		sent += "; " + test.Answer
	}
	start := wallclock.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(webhookPoll)
	defer tick.Stop()
	for {
		after, err := readRecords(ctx, rdb, pc)
		if err != nil {
			return platforms.Fail(webhookCheckName, sent+"; read the receiver's record: "+err.Error(), "fix the redis row first")
		}
		took := time.Since(start).Round(time.Millisecond)
		if after.project.Authenticated > before.project.Authenticated {
			return platforms.OK(webhookCheckName, "%s, received and authenticated (%s) within %s%s", sent, after.project.AuthenticatedEvent, took, alsoSeen(before, after))
		}
		select {
		case <-ctx.Done():
			return notAuthenticated(sent, test, took, before, after, sources)
		case <-deadline.C:
			return notAuthenticated(sent, test, took, before, after, sources)
		case <-tick.C:
		}
	}
}

// records are a project's record and its platform's unattributed one.
type records struct{ project, unattributed receiver.AuthRecord }

// rejectedSince counts the rejections recorded between before and after,
// in the project's record and the platform's unattributed one, and names
// the reason of the last one.
func rejectedSince(before, after records) (n int64, reason string) {
	p := after.project.Rejected - before.project.Rejected
	u := after.unattributed.Rejected - before.unattributed.Rejected
	switch {
	case p > 0 && (u <= 0 || !after.unattributed.RejectedAt.After(after.project.RejectedAt)):
		reason = after.project.RejectedReason
	case u > 0:
		reason = after.unattributed.RejectedReason
	}
	return max(p, 0) + max(u, 0), reason
}

// alsoSeen reports the rejections recorded while check waited for its
// test delivery beside an authenticated one: anyone who reaches the
// receiver can send those, so they change no verdict.
func alsoSeen(before, after records) string {
	n, reason := rejectedSince(before, after)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; also seen: %d rejected (%s, could be anyone)", n, reasonText(reason))
}

// notAuthenticated is the row when no authenticated delivery arrived
// within the wait. The verdict rests on that absence: rejections seen
// meanwhile are reported, and their reason names the likely fix, but
// anyone could have sent them, the tracker's test among them or not.
func notAuthenticated(sent string, test platforms.WebhookTest, took time.Duration, before, after records, sources []string) platforms.CheckResult {
	n, reason := rejectedSince(before, after)
	if n == 0 {
		return neverReceived(sent, test, took)
	}
	return platforms.Fail(webhookCheckName,
		fmt.Sprintf("%s, but no authenticated delivery within %s; also seen: %d rejected: %s (could be anyone, the test among them)",
			sent, took, n, reasonText(reason)),
		receiver.RejectFix(reason, sources))
}

func readRecords(ctx context.Context, rdb redis.UniversalClient, pc *config.Project) (records, error) {
	p, err := receiver.ReadAuthRecord(ctx, rdb, pc.Platform, pc.Name)
	if err != nil {
		return records{}, err
	}
	u, err := receiver.ReadAuthRecord(ctx, rdb, pc.Platform, "")
	return records{project: p, unattributed: u}, err
}

func neverReceived(sent string, test platforms.WebhookTest, took time.Duration) platforms.CheckResult {
	urls := test.URLs
	if test.Answered {
		return platforms.Fail(webhookCheckName,
			fmt.Sprintf("%s, but this Redis holds no record of it within %s: what answers at %s is not a daemon using this config's Redis",
				sent, took, strings.Join(urls, ", ")),
			"point the hook at the daemon that runs with this config, or run check with that daemon's config")
	}
	return platforms.Fail(webhookCheckName,
		fmt.Sprintf("%s but never received within %s: the URL %s is not reachable from the tracker, or no daemon serves it with this Redis",
			sent, took, strings.Join(urls, ", ")),
		"make that URL reachable from the tracker (DNS, firewall, TLS certificate, the receiver's listen address) and run the daemon with this config")
}

// lastDelivery is the row of a tracker that cannot send a test delivery:
// the receiver's last recorded deliveries, and what they do not prove
// (why: the platform's Descriptor.NoWebhookTest, or a generic reason).
func lastDelivery(rec receiver.AuthRecord, platform string, sources []string, now time.Time) platforms.CheckResult {
	d, _ := platforms.Lookup(platform)
	why := cmp.Or(d.NoWebhookTest, "this tracker cannot send a test delivery")
	ago := func(t time.Time) string { return now.Sub(t).Round(time.Second).String() + " ago" }
	since := max(rec.RejectedSinceAuthenticated, 1)
	switch {
	case rec.Authenticated > 0 && rec.RejectedAt.After(rec.AuthenticatedAt):
		return platforms.Warn(webhookCheckName, fmt.Sprintf("%s; the last authenticated delivery was %s (%s); since then %d rejected: %s, the last %s (could be anyone)",
			why, ago(rec.AuthenticatedAt), rec.AuthenticatedEvent, since, reasonText(rec.RejectedReason), ago(rec.RejectedAt)),
			"if the project's issues changed since the last authenticated delivery, "+receiver.RejectFix(rec.RejectedReason, sources)+"; otherwise the rejections are strangers' requests")
	case rec.Authenticated > 0:
		return platforms.OK(webhookCheckName, "%s; the last delivery, %s (%s), was authenticated (%d authenticated, %d rejected in the record)",
			why, ago(rec.AuthenticatedAt), rec.AuthenticatedEvent, rec.Authenticated, rec.Rejected)
	case rec.Rejected > 0:
		return platforms.Warn(webhookCheckName, fmt.Sprintf("%s; the receiver recorded no authenticated delivery for this project in the last 14 days, and %d rejected: %s, the last %s (could be anyone)",
			why, rec.Rejected, reasonText(rec.RejectedReason), ago(rec.RejectedAt)),
			"if the project's issues changed in that time, "+receiver.RejectFix(rec.RejectedReason, sources)+"; otherwise change an issue (a label) and run check --webhook again")
	}
	return platforms.Warn(webhookCheckName, why+"; the receiver recorded no delivery for this project in the last 14 days",
		"change an issue of the project (a label) and run check --webhook again: a delivery shows here")
}

// reasonText says a rejection's reason in words.
func reasonText(reason string) string {
	switch reason {
	case receiver.ReasonNoSignature:
		return "no signature or token (the hook has no secret set)"
	case receiver.ReasonMalformedSignature:
		return "a malformed signature"
	case receiver.ReasonWrongSecret:
		return "wrong secret"
	case receiver.ReasonOtherProjectSecret:
		return "another project's secret"
	}
	return reason
}
