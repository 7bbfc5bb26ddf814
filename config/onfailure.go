package config

import (
	"fmt"
	"slices"
	"strings"
)

// OnFailure is a stage's on_failure: when the stage's run fails for good
// (the pipeline exited non-zero and is not retried or escalated), the
// ticket goes back to the earlier stage BackTo, carrying the failed
// stage's result or output as $AGENTSMITH_PREVIOUS_RESULT, at most Max
// times per trigger; past that it fails as it would without on_failure.
type OnFailure struct {
	BackTo string `yaml:"back_to"`
	Max    int    `yaml:"max"`
}

// Bounds on on_failure.max: every send-back runs the stages between again.
const (
	DefaultSendBacks = 2
	MaxSendBacks     = 20
)

func (o *OnFailure) applyDefaults() {
	if o != nil {
		setDefault(&o.Max, DefaultSendBacks)
	}
}

// validate checks o against earlier, the names of the stages before its
// own.
func (o *OnFailure) validate(errs *Errors, path string, earlier []string) {
	if o == nil {
		return
	}
	switch {
	case o.BackTo == "":
		errs.add(path+".back_to", "required (the name of an earlier stage the ticket goes back to)")
	case !slices.Contains(earlier, o.BackTo):
		why := "the first stage has none before it"
		if len(earlier) > 0 {
			why = "one of " + strings.Join(earlier, ", ")
		}
		errs.add(path+".back_to", fmt.Sprintf("%q: must name a stage before this one (%s)", o.BackTo, why))
	}
	if o.Max < 1 || o.Max > MaxSendBacks {
		errs.add(path+".max", fmt.Sprintf("must be between 1 and %d", MaxSendBacks))
	}
}
