package config

import (
	"slices"
	"strings"
	"testing"
)

// Pool names become Redis keys and metric labels: only the plain form is
// accepted, and a replica lists each pool once.
func TestPoolNamesAreValidated(t *testing.T) {
	const rule = "must match [a-z][a-z0-9-]{0,31} (a pool name is part of Redis keys and metric labels)"
	got := fieldErrors(t, writeConfig(t, mistakesHead+"    pipeline: {command: [./implement.sh]}\n    pool: \"GPU:{x}\"\n"+
		"consumer: {pools: [gpu, gpu, 9lives, default]}\n"))
	for _, want := range []string{
		"projects[0].pool: " + rule,
		`consumer.pools[1]: duplicate pool "gpu"`,
		"consumer.pools[2]: " + rule,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("errors %q lack %q", got, want)
		}
	}
	if len(got) != 3 {
		t.Errorf("errors = %q, want exactly 3", got)
	}
}

// Unset, a replica serves the default pool and a project waits in it;
// Pools lists every pool the config names, for the queue's layout.
func TestPoolDefaults(t *testing.T) {
	t.Setenv("MISTAKES_TOKEN", "token")
	cfg, err := Load(writeConfig(t, mistakesHead+"    pipeline: {command: [./implement.sh]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Consumer.PoolNames(); !slices.Equal(got, []string{DefaultPool}) {
		t.Errorf("PoolNames = %q", got)
	}
	if got := cfg.Projects[0].PoolName(); got != DefaultPool {
		t.Errorf("PoolName = %q", got)
	}
	cfg.Consumer.Pools = []string{"gpu"}
	cfg.Projects[0].Pool = "arm"
	if got := cfg.Pools(); !slices.Equal(got, []string{"arm", "gpu"}) {
		t.Errorf("Pools = %q, want arm and gpu", got)
	}
}

// A stage's pool is checked as a project's is; Pools lists it beside the
// project's, so the queue holds its lists and check, /status and the
// metrics report it even while no replica serves it.
func TestStagePools(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(staged, "- name: test", "- name: test\n          pool: \"GPU:{x}\"", 1)
	errs := parseErrs(t, bad, map[string]string{"T": "t"})
	want := "projects[0].pipeline.stages[2].pool: must match [a-z][a-z0-9-]{0,31} (a pool name is part of Redis keys and metric labels)"
	if !slices.Contains(errs, want) {
		t.Errorf("errors %q lack %q", errs, want)
	}
	good := strings.Replace(staged, "- name: implement", "- name: implement\n          pool: gpu", 1)
	cfg := mustParse(t, good, map[string]string{"T": "t"})
	if got := cfg.Projects[0].Pipeline.Stages[1].Pool; got != "gpu" {
		t.Errorf("implement's pool = %q, want gpu", got)
	}
	if got := cfg.Projects[0].Pipeline.Stages[0].Pool; got != "" {
		t.Errorf("plan's pool = %q, want unset (the project's)", got)
	}
	if got := cfg.Projects[0].PoolNames(); !slices.Equal(got, []string{DefaultPool, "gpu"}) {
		t.Errorf("project PoolNames = %q, want default and gpu", got)
	}
	if got := cfg.Pools(); !slices.Equal(got, []string{DefaultPool, "gpu"}) {
		t.Errorf("Pools = %q, want default and gpu", got)
	}
}
