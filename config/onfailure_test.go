package config

import (
	"strings"
	"testing"
)

func TestStageOnFailure(t *testing.T) {
	t.Parallel()
	ok := strings.Replace(staged, "        - name: test\n", "        - name: test\n          on_failure: {back_to: implement}\n", 1)
	pl := mustParse(t, ok, map[string]string{"T": "t"}).Projects[0].Pipeline
	if o := pl.Stages[2].OnFailure; o == nil || o.BackTo != "implement" || o.Max != DefaultSendBacks {
		t.Errorf("test's on_failure %+v, want back to implement, max %d", o, DefaultSendBacks)
	}
	if pl.Stages[1].OnFailure != nil {
		t.Errorf("implement has on_failure %+v without one configured", pl.Stages[1].OnFailure)
	}
	for _, c := range []struct{ yaml, want string }{
		{"{back_to: test}", `stages[2].on_failure.back_to: "test": must name a stage before this one (one of plan, implement)`},
		{"{back_to: deploy, max: 1}", `stages[2].on_failure.back_to: "deploy": must name a stage before this one`},
		{"{max: 3}", `stages[2].on_failure.back_to: required`},
		{"{back_to: plan, max: -1}", `stages[2].on_failure.max: must be between 1 and 20`},
		{"{back_to: plan, max: 21}", `stages[2].on_failure.max: must be between 1 and 20`},
	} {
		bad := strings.Replace(staged, "        - name: test\n", "        - name: test\n          on_failure: "+c.yaml+"\n", 1)
		if errs := strings.Join(parseErrs(t, bad, map[string]string{"T": "t"}), "\n"); !strings.Contains(errs, c.want) {
			t.Errorf("on_failure %s: errors lack %q:\n%s", c.yaml, c.want, errs)
		}
	}
	first := strings.Replace(staged, "          max_attempts: 1\n", "          max_attempts: 1\n          on_failure: {back_to: plan}\n", 1)
	if errs := strings.Join(parseErrs(t, first, map[string]string{"T": "t"}), "\n"); !strings.Contains(errs, `stages[0].on_failure.back_to: "plan": must name a stage before this one (the first stage has none before it)`) {
		t.Errorf("the first stage's on_failure accepted: %s", errs)
	}
}
