package keys

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// builders builds one key with every exported key builder of keys.go, by
// name. TestBuildersListsEveryExportedBuilder keeps it complete, so a new
// builder cannot skip the mode tests below (four once did, and built their
// keys outside the hash tag).
var builders = map[string]func() string{
	"ClaimLock":           func() string { return ClaimLock("github", "a/b#1") },
	"RunTrigger":          func() string { return RunTrigger("github:a/b#1") },
	"GateDecision":        func() string { return GateDecision("github:a/b#1") },
	"GateParked":          func() string { return GateParked("github:a/b#1") },
	"GateEscalated":       func() string { return GateEscalated("github:a/b#1") },
	"GateTimer":           func() string { return GateTimer("github:a/b#1") },
	"Parked":              Parked,
	"ParkedInfo":          ParkedInfo,
	"GateRejections":      func() string { return GateRejections("github:a/b#1") },
	"Review":              func() string { return Review("github:a/b#1") },
	"Heartbeat":           func() string { return Heartbeat("github:a/b#1") },
	"JiraLabelLock":       func() string { return JiraLabelLock("jira:P-1") },
	"Queue":               Queue,
	"RateBudget":          func() string { return RateBudget("0123abcd") },
	"RatePace":            func() string { return RatePace("0123abcd") },
	"QueueLevel":          func() string { return QueueLevel(1) },
	"QueueLevelPattern":   QueueLevelPattern,
	"PoolQueue":           func() string { return PoolQueue("gpu") },
	"PoolQueueLevel":      func() string { return PoolQueueLevel("gpu", 1) },
	"Processing":          func() string { return Processing("i1") },
	"ProcessingPattern":   ProcessingPattern,
	"Leader":              func() string { return Leader("poller") },
	"Inflight":            Inflight,
	"Outcomes":            Outcomes,
	"Instance":            func() string { return Instance("i1") },
	"InstancePattern":     InstancePattern,
	"Epoch":               Epoch,
	"Delivery":            func() string { return Delivery("github", "d1") },
	"DeliveryBody":        func() string { return DeliveryBody("github", "digest") },
	"WebhookAuth":         func() string { return WebhookAuth("github", "app") },
	"Attempts":            Attempts,
	"Cancel":              func() string { return Cancel("github:a/b#1") },
	"CancelTold":          func() string { return CancelTold("github:a/b#1") },
	"ClaimFresh":          func() string { return ClaimFresh("github:a/b#1") },
	"Blocked":             func() string { return Blocked("p") },
	"StuckFlag":           func() string { return StuckFlag("github:a/b#1", "in-progress") },
	"Audit":               Audit,
	"Delayed":             Delayed,
	"Finished":            func() string { return Finished("github:a/b#1") },
	"StageResult":         func() string { return StageResult("github:a/b#1") },
	"SentBack":            func() string { return SentBack("github:a/b#1") },
	"ProjectSlots":        func() string { return ProjectSlots("p") },
	"TokenSlots":          func() string { return TokenSlots("t") },
	"RunLogs":             func() string { return RunLogs("github:a/b#1") },
	"Discovery":           func() string { return Discovery() },
	"TriggerPermission":   func() string { return TriggerPermission("p", "d") },
	"TriggerPermissionIn": func() string { return TriggerPermissionIn("p", "KEY", "d") },
	"TriggerTeam":         func() string { return TriggerTeam("p", "t", "d") },
	"TriggerActor":        func() string { return TriggerActor("github:a/b#1") },
	"TriggerRefusal":      func() string { return TriggerRefusal("github:a/b#1", "d") },
	"TrackerRefusal":      func() string { return TrackerRefusal("github:a/b#1") },
	"TrackerRefusals":     TrackerRefusals,
	"Paused":              func() string { return Paused("app") },
	"CommandReplies":      func() string { return CommandReplies("github:a/b#1") },
	"PausedPattern":       PausedPattern,
}

// notBuilders are the exported functions of keys.go that return a string
// but build no key.
var notBuilders = map[string]bool{"ProcessingInstance": true, "PausedProject": true}

// every builds one key of each kind, by builder name.
func every() map[string]string {
	out := make(map[string]string, len(builders))
	for name, build := range builders {
		out[name] = build()
	}
	return out
}

// Go cannot list a package's functions by reflection, so this reads
// keys.go: every exported function returning a string is a key builder and
// must be in builders (and builders names nothing that is gone).
func TestBuildersListsEveryExportedBuilder(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "keys.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !fn.Name.IsExported() || notBuilders[fn.Name.Name] {
			continue
		}
		res := fn.Type.Results
		if res == nil || len(res.List) != 1 || len(res.List[0].Names) > 1 {
			continue
		}
		if id, ok := res.List[0].Type.(*ast.Ident); !ok || id.Name != "string" {
			continue
		}
		found[fn.Name.Name] = true
		if builders[fn.Name.Name] == nil {
			t.Errorf("exported key builder %s is missing from builders in keys_test.go", fn.Name.Name)
		}
	}
	for name := range builders {
		if !found[name] {
			t.Errorf("builders lists %s, which keys.go does not export as a key builder", name)
		}
	}
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
	for name, k := range every() {
		if !strings.HasPrefix(k, "agentsmith:") {
			t.Errorf("%s: %q lacks the specification's prefix", name, k)
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
	plain := every()
	mode.Store(modeUnset)
	if err := UseHashTag(true); err != nil {
		t.Fatal(err)
	}
	for name, k := range every() {
		// Redis hashes only the part between the first "{" and the next "}".
		if !strings.HasPrefix(k, "{agentsmith}:") {
			t.Errorf("%s: %q lacks the hash tag", name, k)
		}
		// The mode changes the prefix and nothing else.
		if rest := strings.TrimPrefix(plain[name], "agentsmith:"); k != "{agentsmith}:"+rest {
			t.Errorf("%s: %q in cluster mode, %q without", name, k, plain[name])
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
