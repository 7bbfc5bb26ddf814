// Package helm_test renders the Helm chart (agentsmithd/) with the Helm SDK
// and the kustomization (../kubernetes) with kustomize's krusty, checks every
// object against the Kubernetes API schemas, and checks the two agree on the
// pod they run. It is its own Go module so the main module does not carry the
// Helm and Kubernetes libraries: .ci/run runs it (`cd deploy/helm && go test
// ./...`).
package helm_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/agentsmithd/agentsmithd/config"
)

// Image is the one image name: the chart, the kustomization, the Dockerfile
// and the release all use it (deploy/image_test.go checks the rest of the
// repository).
const image = "ghcr.io/agentsmithd/agentsmithd"

// Secret values the kustomize render is given: none may appear outside the
// Secret.
var secretFiles = map[string]string{
	"github-token":          "ghp_testtokenvalue0123456789",
	"github-webhook-secret": "webhook-secret-value-abcdef",
	"redis-password":        "redis-password-value-0123",
	"status-token":          "status-token-value-4567",
}

// objects is a render: every object by "Kind/name", and the raw YAML.
type objects struct {
	byKey map[string]*unstructured.Unstructured
	raw   string
}

func (o objects) get(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	u := o.byKey[kind+"/"+name]
	if u == nil {
		t.Fatalf("no %s/%s among %v", kind, name, o.keys())
	}
	return u
}

func (o objects) keys() []string {
	var ks []string
	for k := range o.byKey {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func parseObjects(t *testing.T, docs []string) objects {
	t.Helper()
	o := objects{byKey: map[string]*unstructured.Unstructured{}, raw: strings.Join(docs, "\n---\n")}
	for _, doc := range docs {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if string(js) == "null" {
			continue // a document of comments only
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		key := u.GetKind() + "/" + u.GetName()
		if o.byKey[key] != nil {
			t.Fatalf("two objects %s", key)
		}
		o.byKey[key] = u
	}
	return o
}

// splitYAML splits a multi-document YAML stream at its "---" lines.
func splitYAML(s string) []string {
	var docs []string
	var cur []string
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " ") == "---" {
			docs = append(docs, strings.Join(cur, "\n"))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, strings.Join(cur, "\n"))
}

// renderChart renders the chart as `helm template agentsmithd
// ./agentsmithd -n agentsmithd` does, with extra values merged over
// values.yaml.
func renderChart(t *testing.T, extra map[string]any) (objects, error) {
	t.Helper()
	ch, err := loader.Load("agentsmithd")
	if err != nil {
		t.Fatal(err)
	}
	opts := chartutil.ReleaseOptions{Name: "agentsmithd", Namespace: "agentsmithd", Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(ch, extra, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return objects{}, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return objects{}, err
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var docs []string
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		docs = append(docs, splitYAML(files[name])...)
	}
	return parseObjects(t, docs), nil
}

// renderKustomize renders ../kubernetes as `kubectl kustomize` does, with
// the secret files the user creates written into an in-memory copy.
func renderKustomize(t *testing.T) objects {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	const root = "/kubernetes"
	err := filepath.WalkDir("../kubernetes", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("../kubernetes", path)
		if strings.HasPrefix(rel, "secrets/") && !strings.HasSuffix(rel, "README.md") && !strings.HasSuffix(rel, ".gitignore") {
			return nil // a developer's real secrets, if any: never read
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile(filepath.Join(root, rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range secretFiles {
		if err := mem.WriteFile(root+"/secrets/"+name, []byte(v+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, root)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, splitYAML(string(out)))
}

// validate checks every object against the Kubernetes API's schema (the
// OpenAPI-derived structured-merge-diff schema client-go ships for server-
// side apply): unknown fields, wrong types and bad nesting fail. Each object
// also decodes strictly into its Go type (k8s.io/api).
func validate(o objects) []error {
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	var errs []error
	for _, key := range o.keys() {
		u := o.byKey[key]
		if _, err := tc.ObjectToTyped(u); err != nil {
			errs = append(errs, fmt.Errorf("%s: not valid against the Kubernetes schema: %w", key, err))
			continue
		}
		obj, err := scheme.Scheme.New(u.GroupVersionKind())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
			continue
		}
		js, _ := u.MarshalJSON()
		if err := yaml.UnmarshalStrict(js, obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: strict decode: %w", key, err))
		}
	}
	return errs
}

func mustValidate(t *testing.T, o objects) {
	t.Helper()
	if len(o.byKey) == 0 {
		t.Fatal("nothing rendered")
	}
	for _, err := range validate(o) {
		t.Error(err)
	}
}

// The schema check is not a formality: a misspelt field, a string where a
// number goes, a list where a string goes and an unknown kind are each
// refused.
func TestValidateRefusesBadObjects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selctor: {a: b}}\n",
		"wrong type":    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: two, selector: {}, template: {}}\n",
		"bad nesting":   "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, ports: [{containerPort: 80, protocol: [TCP]}]}]}\n",
		"unknown kind":  "apiVersion: v1\nkind: Deploymnet\nmetadata: {name: d}\n",
	} {
		if errs := validate(parseObjects(t, []string{doc})); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	good := "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {a: b}, ports: [{port: 80}]}\n"
	if errs := validate(parseObjects(t, []string{good})); len(errs) != 0 {
		t.Errorf("a valid Service: %v", errs)
	}
}

// helm lint finds no warning or error (an info remains: the chart has no
// icon).
func TestChartLints(t *testing.T) {
	res := lint.All("agentsmithd", nil, "agentsmithd", false)
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
}

func TestChartRendersValidObjects(t *testing.T) {
	o, err := renderChart(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustValidate(t, o)
	if want := []string{"ConfigMap/agentsmithd-config", "Deployment/agentsmithd", "PodDisruptionBudget/agentsmithd", "Service/agentsmithd"}; !reflect.DeepEqual(o.keys(), want) {
		t.Errorf("chart renders %v, want %v (no Secret: the user creates it)", o.keys(), want)
	}
	d := deployment(t, o.get(t, "Deployment", "agentsmithd"))
	checkPod(t, "chart", d)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image+":latest" {
		t.Errorf("chart image %q, want %s:<appVersion>", got, image)
	}
	if got := volume(t, d, "secrets").Secret.SecretName; got != "agentsmithd-secrets" {
		t.Errorf("chart mounts Secret %q", got)
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation: a config change would not roll the pods")
	}

	o, err = renderChart(t, map[string]any{"image": map[string]any{"tag": "1.2.3"}, "extraArgs": []any{"--roles", "receiver"}})
	if err != nil {
		t.Fatal(err)
	}
	d = deployment(t, o.get(t, "Deployment", "agentsmithd"))
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != image+":1.2.3" || !reflect.DeepEqual(c.Args, []string{"serve", "-c", "/etc/agentsmithd/config.yaml", "--roles", "receiver"}) {
		t.Errorf("with tag and extraArgs: image %q, args %q", c.Image, c.Args)
	}
}

// Values the pod cannot go without are refused with a message naming
// them, instead of a Deployment with an empty Secret name or an unbounded
// volume.
func TestChartRefusesMissingValues(t *testing.T) {
	for key, vals := range map[string]map[string]any{
		"existingSecret":       {"existingSecret": ""},
		"workVolume.sizeLimit": {"workVolume": map[string]any{"sizeLimit": nil}},
	} {
		_, err := renderChart(t, vals)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("without %s: %v", key, err)
		}
	}
}

func TestKustomizeRendersValidObjects(t *testing.T) {
	o := renderKustomize(t)
	mustValidate(t, o)
	var secretName string
	for _, k := range o.keys() {
		u := o.byKey[k]
		if u.GetKind() == "Secret" {
			if secretName != "" {
				t.Errorf("two Secrets: %s and %s", secretName, u.GetName())
			}
			secretName = u.GetName()
		}
		if u.GetKind() != "Namespace" && u.GetNamespace() != "agentsmithd" {
			t.Errorf("%s in namespace %q", k, u.GetNamespace())
		}
	}
	if !strings.HasPrefix(secretName, "agentsmithd-secrets-") {
		t.Fatalf("the Secret is %q, want agentsmithd-secrets-<hash> from the secretGenerator", secretName)
	}
	var sec corev1.Secret
	convert(t, o.get(t, "Secret", secretName), &sec)
	for k, v := range secretFiles {
		if got := strings.TrimSpace(string(sec.Data[k])); got != v {
			t.Errorf("Secret %s = %q, want the file's content", k, got)
		}
	}
	// Only the Secret carries the values, in no encoding elsewhere.
	for _, k := range o.keys() {
		if k == "Secret/"+secretName {
			continue
		}
		js, _ := o.byKey[k].MarshalJSON()
		for name, v := range secretFiles {
			if bytes.Contains(js, []byte(v)) {
				t.Errorf("%s holds the value of %s", k, name)
			}
		}
	}

	d := deployment(t, o.get(t, "Deployment", "agentsmithd"))
	checkPod(t, "kustomize", d)
	if got := volume(t, d, "secrets").Secret.SecretName; got != secretName {
		t.Errorf("the Deployment mounts Secret %q, want the generated %q", got, secretName)
	}
	var sts appsv1.StatefulSet
	convert(t, o.get(t, "StatefulSet", "redis"), &sts)
	pod := sts.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("redis: automountServiceAccountToken is not false")
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName != secretName {
			t.Errorf("redis mounts Secret %q, want %q", v.Secret.SecretName, secretName)
		}
		if v.ConfigMap != nil && !strings.HasPrefix(v.ConfigMap.Name, "redis-config-") {
			t.Errorf("redis mounts ConfigMap %q", v.ConfigMap.Name)
		}
	}
}

// The chart and the kustomization run the same pod: same image, probes,
// security contexts, ports, mounts, volumes, grace period, resources and
// config.
func TestChartAndKustomizeAgree(t *testing.T) {
	ch, err := renderChart(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	ku := renderKustomize(t)
	a, b := deployment(t, ch.get(t, "Deployment", "agentsmithd")), deployment(t, ku.get(t, "Deployment", "agentsmithd"))
	pa, pb := a.Spec.Template.Spec, b.Spec.Template.Spec
	ca, cb := pa.Containers[0], pb.Containers[0]
	repo := func(img string) string { r, _, _ := strings.Cut(img, ":"); return r }
	same := map[string][2]any{
		"replicas":                      {a.Spec.Replicas, b.Spec.Replicas},
		"strategy":                      {a.Spec.Strategy, b.Spec.Strategy},
		"image repository":              {repo(ca.Image), repo(cb.Image)},
		"args":                          {ca.Args, cb.Args},
		"ports":                         {ca.Ports, cb.Ports},
		"livenessProbe":                 {ca.LivenessProbe, cb.LivenessProbe},
		"readinessProbe":                {ca.ReadinessProbe, cb.ReadinessProbe},
		"resources":                     {ca.Resources, cb.Resources},
		"container securityContext":     {ca.SecurityContext, cb.SecurityContext},
		"pod securityContext":           {pa.SecurityContext, pb.SecurityContext},
		"volumeMounts":                  {ca.VolumeMounts, cb.VolumeMounts},
		"env":                           {ca.Env, cb.Env},
		"automountServiceAccountToken":  {pa.AutomountServiceAccountToken, pb.AutomountServiceAccountToken},
		"terminationGracePeriodSeconds": {pa.TerminationGracePeriodSeconds, pb.TerminationGracePeriodSeconds},
		"work volume":                   {volume(t, a, "work").VolumeSource, volume(t, b, "work").VolumeSource},
		"secrets defaultMode":           {volume(t, a, "secrets").Secret.DefaultMode, volume(t, b, "secrets").Secret.DefaultMode},
		"prometheus annotations": {
			[]string{a.Spec.Template.Annotations["prometheus.io/port"], a.Spec.Template.Annotations["prometheus.io/path"]},
			[]string{b.Spec.Template.Annotations["prometheus.io/port"], b.Spec.Template.Annotations["prometheus.io/path"]}},
	}
	for what, pair := range same {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			ja, _ := yaml.Marshal(pair[0])
			jb, _ := yaml.Marshal(pair[1])
			t.Errorf("%s differs:\nchart:\n%s\nkustomize:\n%s", what, ja, jb)
		}
	}
	if got := volume(t, b, "config").ConfigMap.Name; got != "agentsmithd-config" {
		t.Errorf("kustomize config volume %q", got)
	}
	cfgA := configOf(t, ch.get(t, "ConfigMap", "agentsmithd-config"))
	cfgB := configOf(t, ku.get(t, "ConfigMap", "agentsmithd-config"))
	var ma, mb map[string]any
	if err := yaml.Unmarshal([]byte(cfgA), &ma); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(cfgB), &mb); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ma, mb) {
		t.Errorf("config.yaml differs:\nchart:\n%s\nkustomize:\n%s", cfgA, cfgB)
	}
	// The config is one the daemon accepts (the secret files exist only in
	// the pod), and the grace period outlasts the daemon's own shutdown.
	cfg, err := config.Parse([]byte(cfgA), func(string) (string, bool) { return "", false })
	var errs config.Errors
	if err != nil && !errors.As(err, &errs) {
		t.Fatal(err)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "cannot read /etc/agentsmithd/secrets/") {
			t.Errorf("config.yaml: %v", e)
		}
	}
	if cfg != nil {
		need := cfg.Consumer.ShutdownGrace + cfg.Consumer.KillGrace
		if grace := time.Duration(*pa.TerminationGracePeriodSeconds) * time.Second; grace <= need {
			t.Errorf("terminationGracePeriodSeconds %s <= shutdown_grace + kill_grace %s", grace, need)
		}
	}
}

// checkPod is what each render's agentsmithd pod must have.
func checkPod(t *testing.T, which string, d *appsv1.Deployment) {
	t.Helper()
	p := d.Spec.Template.Spec
	if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", which)
	}
	if w := volume(t, d, "work"); w.EmptyDir == nil || w.EmptyDir.SizeLimit == nil || w.EmptyDir.SizeLimit.IsZero() {
		t.Errorf("%s: the work volume has no sizeLimit: %+v", which, w.VolumeSource)
	}
	if sc := p.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: pod may run as root", which)
	}
	if len(p.Containers) != 1 {
		t.Fatalf("%s: %d containers", which, len(p.Containers))
	}
	c := p.Containers[0]
	if !strings.HasPrefix(c.Image, image+":") {
		t.Errorf("%s: image %q, want %s", which, c.Image, image)
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: privilege escalation allowed", which)
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil && e.Value != "" {
			for _, v := range secretFiles {
				if e.Value == v {
					t.Errorf("%s: secret in plain env %s", which, e.Name)
				}
			}
			if up := strings.ToUpper(e.Name); strings.Contains(up, "TOKEN") || strings.Contains(up, "SECRET") || strings.Contains(up, "PASSWORD") {
				t.Errorf("%s: %s is a plain env value; mount it from the Secret", which, e.Name)
			}
		}
	}
	if len(c.EnvFrom) != 0 {
		t.Errorf("%s: envFrom puts a whole Secret or ConfigMap into the pipelines' parent's environment", which)
	}
}

func convert(t *testing.T, u *unstructured.Unstructured, out runtime.Object) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
}

func deployment(t *testing.T, u *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	convert(t, u, &d)
	return &d
}

func volume(t *testing.T, d *appsv1.Deployment, name string) corev1.Volume {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("%s: no volume %q", d.Name, name)
	return corev1.Volume{}
}

func configOf(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	var cm corev1.ConfigMap
	convert(t, u, &cm)
	if cm.Data["config.yaml"] == "" {
		t.Fatalf("ConfigMap %s has no config.yaml", cm.Name)
	}
	return cm.Data["config.yaml"]
}
