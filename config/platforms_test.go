package config

// Config validates projects against the registered platforms; its tests
// need every real one registered, as the binaries have them.
import _ "github.com/agentsmithd/agentsmithd/platforms/all"
