package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// MemoryResult is Go heap (not RSS) of the bench process.
type MemoryResult struct {
	IdleHeapAllocMB   float64 `json:"idle_heap_alloc_mb"`
	QueuedHeapAllocMB float64 `json:"queued_10k_heap_alloc_mb"`
	DeltaKB           float64 `json:"delta_kb"`
	IdleHeapInuseMB   float64 `json:"idle_heap_inuse_mb"`
	QueuedHeapInuseMB float64 `json:"queued_10k_heap_inuse_mb"`
	Note              string  `json:"note"`
}

func heap() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

func (b *bench) memory(ctx context.Context) error {
	fmt.Println("## 6. Memory: Go heap (runtime.ReadMemStats after GC), not RSS")
	fmt.Println()
	fmt.Println("The composition (claim service, receiver; no executor, so the requests stay queued) lives in the bench process next to")
	fmt.Println("the sim, so absolute figures include the bench; the delta is what 10k queued requests cost the daemon's heap.")
	fmt.Println()
	w, err := newWorld(b.rdb, projectSpec{name: "mem", repo: "acme/mem", command: []string{"true"}, webhook: true})
	if err != nil {
		return err
	}
	defer w.close()
	idle := heap()
	for i := range 10000 {
		req := lifecycle.PipelineRequest{ID: fmt.Sprintf("req-%d", i), Ref: ref("mem", "acme/mem", i+1), Source: lifecycle.SourceWebhook, Attempt: 1, EnqueuedAt: time.Now()}
		if err := w.q.Push(ctx, req.Encode()); err != nil {
			return err
		}
	}
	queued := heap()
	mb := func(v uint64) float64 { return float64(v) / (1 << 20) }
	r := &MemoryResult{IdleHeapAllocMB: mb(idle.HeapAlloc), QueuedHeapAllocMB: mb(queued.HeapAlloc),
		DeltaKB:         (float64(queued.HeapAlloc) - float64(idle.HeapAlloc)) / 1024,
		IdleHeapInuseMB: mb(idle.HeapInuse), QueuedHeapInuseMB: mb(queued.HeapInuse),
		Note: "Go heap of the bench process, not RSS; queued requests live in Redis, not in the daemon"}
	b.res.Memory = r
	fmt.Println("| state | HeapAlloc | HeapInuse |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| idle | %.2f MiB | %.2f MiB |\n", r.IdleHeapAllocMB, r.IdleHeapInuseMB)
	fmt.Printf("| 10k requests queued | %.2f MiB (Δ %+.0f KiB) | %.2f MiB |\n", r.QueuedHeapAllocMB, r.DeltaKB, r.QueuedHeapInuseMB)
	fmt.Println()
	return nil
}
