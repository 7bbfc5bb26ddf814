package redisconn

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestGoRedisLogsThroughZap(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	zapLogger{log: zap.New(core).Named("go-redis")}.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %s\n", 5, "refused")
	all := logs.All()
	if len(all) != 1 || all[0].Message != "connection pool: failed to dial after 5 attempts: refused" ||
		all[0].LoggerName != "go-redis" || all[0].Level != zap.DebugLevel {
		t.Fatalf("logged %+v", all)
	}
}
