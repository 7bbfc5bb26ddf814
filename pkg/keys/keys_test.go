package keys

import (
	"errors"
	"strings"
	"testing"
)

// every builds one key of each kind.
func every() []string {
	return []string{ClaimLock("github", "a/b#1"), Heartbeat("github:a/b#1"), JiraLabelLock("jira:P-1"), Queue(),
		Processing("i1"), ProcessingPattern(), Leader("poller"), Inflight(), Instance("i1"), InstancePattern(),
		Epoch(), Delivery("github", "d1"), Attempts(), Cancel("github:a/b#1"), Audit(), Delayed(),
		TriggerPermission("p", "d"), TriggerTeam("p", "t", "d"), TriggerActor("github:a/b#1"), TriggerRefusal("github:a/b#1", "d"),
		Paused("app"), PausedPattern()}
}

// resetMode undoes the process-wide mode for this test binary only.
func resetMode(t *testing.T) {
	mode.Store(modeUnset)
	t.Cleanup(func() { mode.Store(modeUnset) })
}

func TestSpecificationNamesWithoutHashTag(t *testing.T) {
	resetMode(t)
	if got := Heartbeat("github:a/b#1"); got != "agentsmith:heartbeat:github:a/b#1" {
		t.Errorf("Heartbeat = %q", got)
	}
	for _, k := range every() {
		if !strings.HasPrefix(k, "agentsmith:") {
			t.Errorf("%q lacks the specification's prefix", k)
		}
	}
	if got := ProcessingInstance(Processing("host-1")); got != "host-1" {
		t.Errorf("ProcessingInstance = %q", got)
	}
	if HashTagged() {
		t.Error("HashTagged() = true by default")
	}
}

func TestHashTagPutsEveryKeyInOneSlot(t *testing.T) {
	resetMode(t)
	if err := UseHashTag(true); err != nil {
		t.Fatal(err)
	}
	for _, k := range every() {
		// Redis hashes only the part between the first "{" and the next "}".
		if !strings.HasPrefix(k, "{agentsmith}:") {
			t.Errorf("%q lacks the hash tag", k)
		}
	}
	if got := ProcessingInstance(Processing("host-1")); got != "host-1" {
		t.Errorf("ProcessingInstance = %q", got)
	}
}

func TestModeIsFixedByFirstUse(t *testing.T) {
	resetMode(t)
	_ = Queue() // first key: plain
	if err := UseHashTag(false); err != nil {
		t.Errorf("same mode again: %v", err)
	}
	if err := UseHashTag(true); !errors.Is(err, ErrModeFixed) {
		t.Errorf("switch after first use = %v, want ErrModeFixed", err)
	}
	if got := Queue(); got != "agentsmith:queue:jobs" {
		t.Errorf("Queue() changed to %q", got)
	}
}
