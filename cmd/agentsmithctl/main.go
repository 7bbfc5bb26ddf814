// Command agentsmithctl is the operator's CLI for an agentsmithd fleet. It
// reads the daemon's own config file to find Redis and the projects, and
// talks to Redis and the trackers exactly as the daemon does (same key
// layout, same tracker clients, same claim lock).
//
// Exit codes: 0 ok, 1 error, 2 usage (bad flags or arguments, or a
// confirmation such as --yes missing), 3 not found (unknown ticket or
// project, no history, nothing to release).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
