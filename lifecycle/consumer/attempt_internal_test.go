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
	if env := pipelineSpec(withSecret, tk, 1, "/w").Env; !slices.Contains(env, "GH_TOKEN=s3cret") {
		t.Errorf("secret missing from its project's pipeline: %q", env)
	}
	for _, kv := range pipelineSpec(without, tk, 1, "/w").Env {
		if kv == "GH_TOKEN=s3cret" {
			t.Errorf("another project's pipeline got the secret")
		}
	}
}
