package lifecycletest

import "github.com/agentsmithd/agentsmithd/lifecycle"

// Label is the label that shows s under the default prefix, as a daemon
// with the default config writes it: tests name lifecycle labels through
// lifecycle, so they follow its spelling.
func Label(s lifecycle.State) string {
	return lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}.Label(s)
}
