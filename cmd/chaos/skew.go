package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// skewEnv is the clock a replica slot runs with (pkg/wallclock): slot 1
// minutes ahead, slot 2 as far behind, slot 3 right. Leases, heartbeats
// and presence are Redis TTLs trusted on each replica's monotonic clock, so
// the skew reaches only what crosses replicas as wall time: concurrency-slot
// scores, enqueued_at and a run's started (docs/testing.md
// "Where wall time is used"). The pipelines' run log is written by bash
// with the real clock, so the overlap analysis is not skewed.
func skewEnv(slot int, skew time.Duration) []string {
	if skew == 0 {
		return nil
	}
	switch slot {
	case 1:
		return []string{wallclock.Env + "=" + skew.String()}
	case 2:
		return []string{wallclock.Env + "=" + (-skew).String()}
	}
	return nil
}

// skewSeen is the largest queue wait a replica logged (the executor's
// "queueWait": its clock at the start minus enqueued_at, written by the
// claiming replica's clock): with replicas apart by 2×skew it shows the
// skew reached the daemons, where nothing decides on it.
func skewSeen(dir string) time.Duration {
	logs, _ := filepath.Glob(filepath.Join(dir, "r*.log"))
	var worst float64
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, m := range queueWaitRE.FindAllSubmatch(b, -1) {
			if v, err := strconv.ParseFloat(string(m[1]), 64); err == nil && v > worst {
				worst = v
			}
		}
	}
	return time.Duration(worst * float64(time.Second))
}

var queueWaitRE = regexp.MustCompile(`"queueWait":(-?[0-9.e+]+)`)

func printSkew(row func(string, any), skew, seen time.Duration) {
	if skew == 0 {
		return
	}
	row(fmt.Sprintf("clock skew: replica 1 +%s, replica 2 -%s; largest queue wait logged", skew, skew), seen.Round(time.Second))
}
