package platforms

import "context"

// WebhookTester is implemented by trackers that can ask the tracker for a
// test delivery to a hook (GitHub pings, GitLab hook tests, Azure DevOps
// test notifications): `agentsmithd check --webhook` proves with it that
// the tracker reaches the receiver with the right secret, reading the
// receiver's record of the delivery afterwards (lifecycle/receiver
// authrecord.go). Jira has no such API and does not implement it.
type WebhookTester interface {
	// TestWebhook asks for one test delivery to each hook of the project
	// that points at the receiver (HookTarget with opts.ReceiverURL). A
	// result that is not CheckOK says why none was sent (no such hook,
	// the token may not test hooks, a rate limit); it is reported as is.
	TestWebhook(ctx context.Context, opts CheckOptions) (WebhookTest, CheckResult)
}

// WebhookTest is what a tracker did when asked for test deliveries.
type WebhookTest struct {
	// Sent names each hook a test delivery was asked for, with its URL
	// ("repository hook 12 → https://…/webhooks/github").
	Sent []string
	// URLs are the hooks' URLs, for the "never received" report.
	URLs []string
	// Answer is the tracker's own account of the delivery where it waits
	// for the receiver (GitLab: "the receiver answered 401 …"); "" where
	// it sends later (GitHub, Azure DevOps).
	Answer string
	// Answered is true when the tracker reports an HTTP answer from the
	// receiver (any status): the URL is reachable.
	Answered bool
}
