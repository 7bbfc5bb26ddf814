package config

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/lease"
	"github.com/agentsmithd/agentsmithd/pkg/presence"
	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
)

// TestEmptyConfigPrintsTheServicesDefaults is the map of defaults that a
// service also applies by itself to a zero Config field: print-config of a
// config that sets none of them must show each service's own named default,
// so the daemon built from a config and a service built without one (tests,
// tools) cannot drift apart. A setting wired to the wrong constant, or
// given a literal of its own here, fails.
func TestEmptyConfigPrintsTheServicesDefaults(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `projects:
  - {name: gh, platform: github, repo: acme/app, token: {env: T}, polling: {enabled: true}, pipeline: {command: [./run.sh]}}
  - {name: gl, platform: gitlab, repo: acme/app, token: {env: T}, polling: {enabled: true}, pipeline: {command: [./run.sh]}}
  - {name: ado, platform: azuredevops, repo: acme/app, token: {env: T}, polling: {enabled: true}, pipeline: {command: [./run.sh]}}
`, map[string]string{"T": "token"})
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var printed map[string]any
	if err := yaml.Unmarshal(out, &printed); err != nil {
		t.Fatalf("printed config: %v\n%s", err, out)
	}
	owners := map[string]any{
		"label_prefix":                         platforms.DefaultLabelPrefix,
		"claim_lock_ttl":                       keys.ClaimLockTTL,
		"consumer.concurrency":                 consumer.DefaultConcurrency,
		"consumer.heartbeat_ttl":               keys.HeartbeatTTL,
		"consumer.heartbeat_renew":             keys.HeartbeatRenew,
		"consumer.shutdown_grace":              consumer.DefaultShutdownGrace,
		"consumer.kill_grace":                  procrun.DefaultGrace,
		"consumer.tail_bytes":                  procrun.DefaultTailBytes,
		"consumer.lower_priority_every":        queue.DefaultLowerEvery,
		"consumer.limit_delay":                 consumer.DefaultLimitDelay,
		"consumer.cancel_check":                consumer.DefaultCancelCheck,
		"consumer.guard_check":                 runguard.DefaultCheck,
		"consumer.output.log_max_bytes":        consumer.DefaultLogMaxBytes,
		"consumer.output.retention.max_age":    housekeeping.DefaultRetentionMaxAge,
		"consumer.output.retention.max_bytes":  housekeeping.DefaultRetentionMaxBytes,
		"consumer.output.retention.interval":   housekeeping.DefaultRetentionInterval,
		"housekeeping.fast_interval":           housekeeping.DefaultFastInterval,
		"housekeeping.slow_interval":           housekeeping.DefaultSlowInterval,
		"housekeeping.enqueued_grace":          housekeeping.DefaultEnqueuedGrace,
		"housekeeping.delayed_interval":        housekeeping.DefaultDelayedInterval,
		"housekeeping.instance_ttl":            presence.DefaultTTL,
		"housekeeping.lease_ttl":               lease.DefaultTTL,
		"poller.lease_ttl":                     lease.DefaultTTL,
		"webhook.max_body_bytes":               receiver.DefaultMaxBody,
		"webhook.delivery_ttl":                 keys.DeliveryTTL,
		"audit.max_len":                        audit.DefaultMaxLen,
		"projects[0].base_url":                 github.DefaultBaseURL,
		"projects[1].base_url":                 gitlab.DefaultBaseURL,
		"projects[2].base_url":                 azuredevops.DefaultBaseURL,
		"projects[0].pipeline.persist_timeout": consumer.DefaultPersistTimeout,
		"projects[0].priority.default":         lifecycle.DefaultPriority,
		"projects[0].polling.interval":         poller.DefaultPollInterval,
		"projects[0].stuck.enqueued_after":     lifecycle.DefaultStuckEnqueued,
		"projects[0].stuck.in_progress_after":  lifecycle.DefaultStuckInProgress,
		"projects[2].stuck.in_progress_after":  lifecycle.DefaultStuckInProgress,
	}
	for path, want := range owners {
		got, err := lookup(printed, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("print-config %s = %v, the owner's default is %v", path, got, want)
		}
	}
}

// lookup follows a dotted path with [i] indexes through decoded YAML.
func lookup(v any, path string) (any, error) {
	for _, part := range strings.Split(path, ".") {
		name, idx, indexed := strings.Cut(part, "[")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a mapping", name)
		}
		if v, ok = m[name]; !ok {
			return nil, fmt.Errorf("%s: not printed", name)
		}
		if indexed {
			i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			list, ok := v.([]any)
			if err != nil || !ok || i >= len(list) {
				return nil, fmt.Errorf("%s: no element %s", name, idx)
			}
			v = list[i]
		}
	}
	return v, nil
}
