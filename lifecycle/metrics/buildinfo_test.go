package metrics_test

import (
	"runtime"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
)

// agentsmith_build_info is one series, value 1, naming the Go version the
// binary was built with.
func TestBuildInfoMetric(t *testing.T) {
	fams, err := metrics.New(metrics.Config{}).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "agentsmith_build_info" {
			continue
		}
		if len(f.Metric) != 1 || f.Metric[0].GetGauge().GetValue() != 1 {
			t.Fatalf("build_info: %v", f.Metric)
		}
		got := map[string]string{}
		for _, l := range f.Metric[0].Label {
			got[l.GetName()] = l.GetValue()
		}
		if got["goversion"] != runtime.Version() || got["version"] == "" || got["commit"] == "" {
			t.Errorf("build_info labels %v", got)
		}
		return
	}
	t.Fatal("agentsmith_build_info not registered")
}
