package redisconn

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// zapLogger sends go-redis's own log lines (pool dial failures, sentinel
// failovers, cluster redirections) through the daemon's zap logger at
// debug: they repeat for every dial attempt, and the daemon reports a Redis
// outage itself, once (pkg/outage).
type zapLogger struct{ log *zap.Logger }

func (l zapLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug(strings.TrimPrefix(strings.TrimSpace(fmt.Sprintf(format, v...)), "redis: "))
}

// UseZap makes go-redis log through log, named "go-redis". go-redis has one
// process-wide logger, so the last call wins; the daemon calls it once at
// start-up.
func UseZap(log *zap.Logger) {
	redis.SetLogger(zapLogger{log: log.Named("go-redis")})
}

// Silence drops go-redis's own log lines: for commands that report a Redis
// failure themselves (check).
func Silence() {
	redis.SetLogger(silent{})
}

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}
