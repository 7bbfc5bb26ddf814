package lifecycle

import (
	"slices"
	"testing"
)

// A liveness value round-trips; an older replica's bare id (or any value
// that is not a record) is a replica of the default pool, as every replica
// of that version was; a replica without the consumer role serves none.
func TestReplicaRecord(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  Replica
	}{
		{Replica{ID: "r1", Pools: []string{"gpu", "default"}}.Encode(), Replica{ID: "r1", Pools: []string{"gpu", "default"}}},
		{Replica{ID: "recv"}.Encode(), Replica{ID: "recv", Pools: []string{}}},
		{"replica-7", Replica{ID: "replica-7", Pools: []string{DefaultPool}}},
		{`{"pools":["gpu"]}`, Replica{ID: `{"pools":["gpu"]}`, Pools: []string{DefaultPool}}},
	} {
		got := DecodeReplica(tc.value)
		if got.ID != tc.want.ID || !slices.Equal(got.Pools, tc.want.Pools) {
			t.Errorf("DecodeReplica(%q) = %+v, want %+v", tc.value, got, tc.want)
		}
	}
	if !ValidPoolName("gpu-2") || ValidPoolName("GPU") || ValidPoolName("a:b") || ValidPoolName("") {
		t.Error("ValidPoolName accepts or refuses the wrong names")
	}
}
