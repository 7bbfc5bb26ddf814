package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
)

const (
	payloadSize = 200
	warmupJobs  = 500
)

// QueueResult is one system at one concurrency.
type QueueResult struct {
	System      string  `json:"system"`
	Concurrency int     `json:"concurrency"`
	Jobs        int     `json:"jobs"`
	Seconds     float64 `json:"seconds"`
	JobsPerSec  float64 `json:"jobs_per_sec"`
	CmdsPerJob  float64 `json:"redis_cmds_per_job"`
	Commands    string  `json:"commands_per_job"`
	Skipped     string  `json:"skipped,omitempty"`
}

func (b *bench) queueCore(ctx context.Context, jobs int) error {
	fmt.Printf("## 1. Queue core: enqueue → take → ack, %d no-op jobs of %d B (warm-up %d excluded)\n\n", jobs, payloadSize, warmupJobs)
	fmt.Println("| system | concurrency | jobs/s | Redis cmds/job | vs asynq (jobs/s) | commands per job |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	for _, c := range []int{1, 10, 100} {
		var row []QueueResult
		for _, sys := range []struct {
			name string
			fn   func(context.Context, int, int) (QueueResult, error)
		}{{"agentsmithd (pkg/queue)", b.runOurs}, {"asynq", b.runAsynq}, {"BullMQ", b.runBullMQ}} {
			if err := b.flush(ctx); err != nil {
				return err
			}
			r, err := sys.fn(ctx, c, jobs)
			if err != nil {
				return fmt.Errorf("%s c=%d: %w", sys.name, c, err)
			}
			r.System, r.Concurrency, r.Jobs = sys.name, c, jobs
			if r.Skipped == "" {
				r.JobsPerSec = float64(jobs) / r.Seconds
			}
			row = append(row, r)
		}
		asynqRate := row[1].JobsPerSec
		for _, r := range row {
			b.res.Queue = append(b.res.Queue, r)
			if r.Skipped != "" {
				fmt.Printf("| %s | %d | skipped: %s | | | |\n", r.System, c, r.Skipped)
				continue
			}
			fmt.Printf("| %s | %d | %.0f | %.2f | %.2f× | %s |\n", r.System, c, r.JobsPerSec, r.CmdsPerJob, r.JobsPerSec/asynqRate, r.Commands)
		}
	}
	fmt.Println()
	return nil
}

// runOurs drives pkg/queue the way the executor does: c producers Push, c
// consumers Take into one processing list (the instance's) and Ack.
func (b *bench) runOurs(ctx context.Context, c, jobs int) (QueueResult, error) {
	q := queue.New(b.rdb, keys.Queue())
	proc := keys.Processing("bench")
	phase := func(n, offset int) (time.Duration, error) {
		var next, done atomic.Int64
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		var wg sync.WaitGroup
		start := time.Now()
		for range c {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					if err := q.Push(ctx, payload(offset+int(i), payloadSize)); err != nil {
						cancel(err)
						return
					}
				}
			})
		}
		finished := make(chan struct{})
		for range c {
			wg.Go(func() {
				for ctx.Err() == nil {
					p, err := q.Take(ctx, proc, time.Second)
					if err != nil {
						if ctx.Err() == nil {
							cancel(err)
						}
						return
					}
					if p == nil {
						continue
					}
					if err := q.Ack(ctx, proc, p); err != nil {
						cancel(err)
						return
					}
					if done.Add(1) == int64(n) {
						close(finished)
					}
				}
			})
		}
		select {
		case <-finished:
		case <-ctx.Done():
		}
		el := time.Since(start)
		err := context.Cause(ctx)
		cancel(errors.New("phase over"))
		wg.Wait()
		if err != nil {
			return 0, err
		}
		return el, nil
	}
	if _, err := phase(warmupJobs, 0); err != nil {
		return QueueResult{}, err
	}
	cnt, err := startCount(ctx, b.rdb)
	if err != nil {
		return QueueResult{}, err
	}
	el, err := phase(jobs, warmupJobs)
	if err != nil {
		return QueueResult{}, err
	}
	// Consumers blocked in BLMOVE when the phase ended are counted too:
	// that is what an idle consumer costs.
	return b.finish(ctx, cnt, el, jobs)
}

func (b *bench) finish(ctx context.Context, cnt *cmdCounter, el time.Duration, jobs int) (QueueResult, error) {
	total, d, err := cnt.stop(ctx)
	if err != nil {
		return QueueResult{}, err
	}
	return QueueResult{Seconds: el.Seconds(), CmdsPerJob: float64(total) / float64(jobs), Commands: topCommands(d, float64(jobs), 6)}, nil
}

// runAsynq: c goroutines Enqueue, a server with Concurrency c and a no-op
// handler; a completed task is deleted (asynq's default, no Retention).
func (b *bench) runAsynq(ctx context.Context, c, jobs int) (QueueResult, error) {
	opt := asynq.RedisClientOpt{Addr: b.addr, PoolSize: max(10, 2*c)}
	client := asynq.NewClient(opt)
	defer client.Close()
	var done, target atomic.Int64
	finished := make(chan struct{}, 1)
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: c, Queues: map[string]int{"default": 1}, LogLevel: asynq.FatalLevel,
		Logger: quietLogger{}})
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(context.Context, *asynq.Task) error {
		if done.Add(1) == target.Load() {
			finished <- struct{}{}
		}
		return nil
	})
	if err := srv.Start(mux); err != nil {
		return QueueResult{}, fmt.Errorf("asynq server: %w", err)
	}
	defer srv.Shutdown()
	phase := func(n, offset int) (time.Duration, error) {
		done.Store(0)
		target.Store(int64(n))
		var next atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		start := time.Now()
		for range c {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					if _, err := client.EnqueueContext(ctx, asynq.NewTask("noop", payload(offset+int(i), payloadSize))); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := firstErr.Load().(error); err != nil {
			return 0, err
		}
		select {
		case <-finished:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(5 * time.Minute):
			return 0, fmt.Errorf("asynq: %d of %d done after 5 min", done.Load(), n)
		}
		return time.Since(start), nil
	}
	if _, err := phase(warmupJobs, 0); err != nil {
		return QueueResult{}, err
	}
	cnt, err := startCount(ctx, b.rdb)
	if err != nil {
		return QueueResult{}, err
	}
	el, err := phase(jobs, warmupJobs)
	if err != nil {
		return QueueResult{}, err
	}
	return b.finish(ctx, cnt, el, jobs)
}

type quietLogger struct{}

func (quietLogger) Debug(...any) {}
func (quietLogger) Info(...any)  {}
func (quietLogger) Warn(...any)  {}
func (quietLogger) Error(...any) {}
func (quietLogger) Fatal(...any) {}

// runBullMQ starts bullmq/bench.js (npm install first if needed).
func (b *bench) runBullMQ(ctx context.Context, c, jobs int) (QueueResult, error) {
	dir, err := filepath.Abs("bullmq")
	if err != nil {
		return QueueResult{}, err
	}
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		return QueueResult{Skipped: "node/npm not installed"}, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq")); err != nil {
		cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return QueueResult{Skipped: "npm install failed: " + lastLine(string(out))}, nil
		}
	}
	host, port, _ := splitHostPort(b.addr)
	cmd := exec.CommandContext(ctx, node, "bench.js", host, port, strconv.Itoa(jobs), strconv.Itoa(c), strconv.Itoa(warmupJobs), strconv.Itoa(payloadSize))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return QueueResult{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return QueueResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return QueueResult{}, err
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "WARM" {
		return QueueResult{}, fmt.Errorf("bullmq script: expected WARM, got %q", sc.Text())
	}
	cnt, err := startCount(ctx, b.rdb)
	if err != nil {
		return QueueResult{}, err
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		return QueueResult{}, err
	}
	if !sc.Scan() {
		return QueueResult{}, fmt.Errorf("bullmq script ended without a result")
	}
	var r struct{ Seconds float64 }
	if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
		return QueueResult{}, fmt.Errorf("bullmq result %q: %w", sc.Text(), err)
	}
	return b.finish(ctx, cnt, time.Duration(r.Seconds*float64(time.Second)), jobs)
}

func splitHostPort(addr string) (string, string, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], nil
		}
	}
	return addr, "", fmt.Errorf("no port in %q", addr)
}

func lastLine(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
