package main

import (
	"os"
	"testing"

	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

// TestMain lets the test binary be a sandbox's init, as the agentsmithd
// binary is: `check`, run inside the test binary, probes a sandbox with
// its own executable.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.Init())
	}
	os.Exit(m.Run())
}
