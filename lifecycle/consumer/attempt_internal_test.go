package consumer

import (
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// A project's pipeline secrets reach its own pipelines' environment and no
// other project's.
func TestPipelineSecretsOnlyForTheirProject(t *testing.T) {
	withSecret := &lifecycle.Project{Name: "a", Pipeline: lifecycle.Pipeline{Command: []string{"true"}, Secrets: map[string]string{"GH_TOKEN": "s3cret"}}}
	without := &lifecycle.Project{Name: "b", Pipeline: lifecycle.Pipeline{Command: []string{"true"}}}
	tk := &platforms.Ticket{Ref: platforms.Ref{Platform: "github", Project: "a", ID: "o/r#1"}}
	if env := pipelineSpec(withSecret, tk, 1, "/w", "r1").Env; !slices.Contains(env, "GH_TOKEN=s3cret") {
		t.Errorf("secret missing from its project's pipeline: %q", env)
	}
	for _, kv := range pipelineSpec(without, tk, 1, "/w", "r1").Env {
		if kv == "GH_TOKEN=s3cret" {
			t.Errorf("another project's pipeline got the secret")
		}
	}
}

// A pipeline learns which daemon instance runs it (AGENTSMITH_INSTANCE):
// in its sandbox the daemon's pid is not visible.
func TestPipelineEnvNamesTheInstance(t *testing.T) {
	p := &lifecycle.Project{Name: "a", Pipeline: lifecycle.Pipeline{Command: []string{"true"}}}
	tk := &platforms.Ticket{Ref: platforms.Ref{Platform: "github", Project: "a", ID: "o/r#1"}}
	if env := pipelineSpec(p, tk, 2, "/w", "replica-7").Env; !slices.Contains(env, "AGENTSMITH_INSTANCE=replica-7") {
		t.Errorf("AGENTSMITH_INSTANCE missing from the pipeline's environment: %q", env)
	}
}
