package housekeeping

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// An empty Redis met at start is told at info level in a newcomer's words;
// an epoch that vanishes under a running watcher is a warning.
func TestEpochLogTellsNewFromLost(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	core, logs := observer.New(zapcore.InfoLevel)
	w := NewEpochWatcher(rdb, EpochWatcherConfig{Logger: zap.New(core)})
	ctx := context.Background()
	if err := w.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if got := logs.FilterLevelExact(zapcore.WarnLevel).Len(); got != 0 {
		t.Errorf("a first start logged %d warnings", got)
	}
	if logs.FilterMessageSnippet("normal on a first start").Len() != 1 {
		t.Errorf("a first start is not told at info: %v", logs.All())
	}
	if err := rdb.Del(ctx, keys.Epoch()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("lost its data").Len() != 1 {
		t.Errorf("a loss under a running watcher is not a warning: %v", logs.All())
	}
}
