package helm_test

// The chart's configs name platforms, which config accepts only once the
// platform packages have registered their descriptors.
import _ "github.com/agentsmithd/agentsmithd/platforms/all"
