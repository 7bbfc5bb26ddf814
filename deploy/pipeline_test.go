package deploy_test

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Kubernetes ConfigMap's pipeline command must be a file the image
// ships: a COPY in the Dockerfile puts a file of this repository there, and
// that file is executable.
func TestConfigMapPipelineIsInTheImage(t *testing.T) {
	cm := yamlDocs(t, "kubernetes/configmap.yaml")[0]
	raw, _ := cm["data"].(map[string]any)["config.yaml"].(string)
	var cfg struct {
		Projects []projectPipeline `yaml:"projects"`
	}
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil || len(cfg.Projects) == 0 {
		t.Fatalf("configmap config.yaml: %v", err)
	}
	for _, df := range []string{"../Dockerfile", "release.Dockerfile"} {
		checkPipelineCopied(t, df, cfg.Projects)
	}
}

type projectPipeline = struct {
	Pipeline struct {
		Command []string `yaml:"command"`
	} `yaml:"pipeline"`
}

// checkPipelineCopied checks every project's pipeline command is a file the
// Dockerfile at dockerfilePath copies into the image, executable.
func checkPipelineCopied(t *testing.T, dockerfilePath string, projects []projectPipeline) {
	t.Helper()
	dockerfile, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	copies := map[string]string{} // image dir → repository dir
	for _, line := range strings.Split(string(dockerfile), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "COPY" || strings.HasPrefix(f[1], "--from") {
			continue
		}
		if strings.HasPrefix(f[1], "--") {
			f = append(f[:1], f[2:]...)
		}
		copies[strings.TrimSuffix(f[len(f)-1], "/")] = strings.TrimSuffix(f[1], "/")
	}
	for i, p := range projects {
		cmd := p.Pipeline.Command
		if len(cmd) == 0 || !path.IsAbs(cmd[0]) {
			t.Errorf("projects[%d].pipeline.command %q: want an absolute path in the image", i, cmd)
			continue
		}
		src, ok := copies[path.Dir(cmd[0])]
		if !ok {
			t.Errorf("%s: projects[%d]: no COPY puts anything in %s", dockerfilePath, i, path.Dir(cmd[0]))
			continue
		}
		fi, err := os.Stat(filepath.Join("..", src, path.Base(cmd[0])))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("projects[%d]: %s/%s (copied to %s) missing or not executable: %v", i, src, path.Base(cmd[0]), cmd[0], err)
		}
	}
}
