package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// image is the one name the agentsmithd image has everywhere.
const image = "ghcr.io/agentsmithd/agentsmithd"

var (
	// A YAML image or repository value.
	imageValue = regexp.MustCompile(`(?m)^\s*-?\s*(?:image|repository):\s*"?([^\s"#]+)`)
	// A registry reference: host.tld[/path]/...agentsmithd.
	registryRef = regexp.MustCompile(`\b[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::[0-9]+)?/[a-z0-9._/-]*agentsmithd\b`)
	// docker build -t NAME / --tag NAME.
	buildTag = regexp.MustCompile(`(?:-t|--tag)[ =]([^\s]+)`)
)

// imageProblems lists every image name in text that is not the one name.
func imageProblems(text string) []string {
	var bad []string
	for _, m := range imageValue.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "agentsmith") && strings.Split(m[1], ":")[0] != image {
			bad = append(bad, m[1])
		}
	}
	for _, loc := range registryRef.FindAllStringIndex(text, -1) {
		ref := text[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("/.", rune(text[loc[0]-1])) {
			continue // a file path such as /usr/lib/sysusers.d/agentsmithd.conf
		}
		if ref != image && !strings.HasPrefix(ref, "github.com/") {
			bad = append(bad, ref)
		}
	}
	for _, m := range buildTag.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "agentsmith") && !strings.HasPrefix(m[1], image+":") && !strings.HasPrefix(m[1], "$(IMAGE)") {
			bad = append(bad, m[1])
		}
	}
	return bad
}

// Every file that builds, tags, runs or documents the image uses one name
// for it, and each of these names it.
func TestOneImageName(t *testing.T) {
	mustName := []string{"../Makefile", "docker-compose.yml", "kubernetes/deployment.yaml",
		"helm/agentsmithd/values.yaml", "../.goreleaser.yaml", "../docs/operations.md"}
	scan := slices.Clone(mustName)
	scan = append(scan, "../Dockerfile", "release.Dockerfile")
	scan = append(scan, files(t, ".yaml", ".yml", ".service", ".md")...)
	seen := map[string]bool{}
	for _, path := range scan {
		path = filepath.Clean(path)
		if seen[path] {
			continue
		}
		seen[path] = true
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range imageProblems(string(data)) {
			t.Errorf("%s: image %q, want %s", path, bad, image)
		}
		if slices.Contains(mustName, path) || slices.Contains(mustName, "../"+path) {
			if !strings.Contains(string(data), image) {
				t.Errorf("%s does not name the image %s", path, image)
			}
		}
	}
	// The check sees other names.
	for _, wrong := range []string{"image: agentsmithd:local", "  image: docker.io/agentsmithd/agentsmithd:1", "docker build -t agentsmithd .",
		"repository: ghcr.io/someone/agentsmithd", "see quay.io/agentsmithd"} {
		if len(imageProblems(wrong)) == 0 {
			t.Errorf("imageProblems(%q) found nothing", wrong)
		}
	}
}

// runtimeStage returns the last stage of a Dockerfile without its COPY
// and ARG lines (which differ: one copies from its build stage, the other
// from GoReleaser's context) and comments.
func runtimeStage(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var stage []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		switch {
		case strings.HasPrefix(line, "FROM "):
			stage = []string{line}
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "ARG "):
		case strings.HasPrefix(line, "COPY ") && !strings.Contains(line, "deploy/pipelines/"):
		default:
			stage = append(stage, line)
		}
	}
	return stage
}

// The release image (GoReleaser) and the Dockerfile's are the same image
// around the same binaries: base, packages, user, pipeline, environment,
// entrypoint.
func TestReleaseImageMatchesDockerfile(t *testing.T) {
	a, b := runtimeStage(t, "../Dockerfile"), runtimeStage(t, "release.Dockerfile")
	if !slices.Equal(a, b) || len(a) < 5 {
		t.Errorf("runtime stages differ:\nDockerfile:\n%s\nrelease.Dockerfile:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// Under an arbitrary UID in group 0 with HOME=/ (OpenShift), the default
// work dir (lifecycle.DefaultWorkRoot: $XDG_STATE_HOME/agentsmithd/work
// for a user other than root) and TMPDIR are in a directory the image
// creates owned by group 0 with the owner's rights (chgrp 0, chmod g=u).
func TestImageStateDirWritableByAnyUID(t *testing.T) {
	for _, path := range []string{"../Dockerfile", "release.Dockerfile"} {
		stage := runtimeStage(t, path)
		env := map[string]string{}
		var run string
		for _, line := range stage {
			if v, ok := strings.CutPrefix(line, "ENV "); ok {
				for _, kv := range strings.Fields(v) {
					k, val, _ := strings.Cut(kv, "=")
					env[k] = val
				}
			}
			if v, ok := strings.CutPrefix(line, "RUN "); ok {
				run += v + " && "
			}
		}
		state := env["XDG_STATE_HOME"]
		if !filepath.IsAbs(state) {
			t.Errorf("%s: XDG_STATE_HOME %q, want an absolute directory (HOME is / under an arbitrary UID)", path, state)
			continue
		}
		if !strings.Contains(run, "mkdir -p "+state+" ") {
			t.Errorf("%s: no RUN creates XDG_STATE_HOME %s", path, state)
		}
		for _, dir := range []string{state, env["TMPDIR"]} {
			ok := false
			for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
				group0 := strings.Contains(run, "chown -R 10001:0 "+d+" ") || strings.Contains(run, "chgrp -R 0 "+d+" ")
				if group0 && strings.Contains(run, "chmod -R g=u "+d+" ") {
					ok = true
					break
				}
			}
			if !ok {
				t.Errorf("%s: %q is not in a directory made group 0 and chmod g=u", path, dir)
			}
		}
	}
}
