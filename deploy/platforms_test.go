package deploy_test

// The shipped configs name real platforms, which config validates against
// the registered ones, as the binaries have them.
import _ "github.com/agentsmithd/agentsmithd/platforms/all"
