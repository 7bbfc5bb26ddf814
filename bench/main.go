// Command bench measures agentsmithd against the queues people would pick
// instead (asynq, BullMQ), and the daemon's own tracker API budget, in one
// run against one redis-server it starts itself on a free port.
//
//	cd bench && go run . -out results.json
//
// It prints a markdown table per section and writes the same figures as
// JSON. Warm-up work is excluded from every count: Redis command counts are
// deltas of INFO commandstats, tracker calls are deltas of the sim's Stats.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/redisserver"
	"github.com/agentsmithd/agentsmithd/pkg/sandbox"
)

// Results is everything the run measured; it is what -out receives.
type Results struct {
	Started      time.Time         `json:"started"`
	GoVersion    string            `json:"go_version"`
	CPUs         int               `json:"cpus"`
	RedisVersion string            `json:"redis_version"`
	Queue        []QueueResult     `json:"queue_core"`
	Lifecycle    []LifecycleResult `json:"lifecycle"`
	// Burst is section 2b (-only burst).
	Burst        []BurstResult     `json:"burst,omitempty"`
	Claim        *ClaimResult      `json:"claim,omitempty"`
	Receiver     []ReceiverResult  `json:"receiver"`
	Housekeeping []HousekeepResult `json:"housekeeping"`
	// HousekeepingRepos is section 5b (-only housekeeping-repos).
	HousekeepingRepos []RepoScaleResult  `json:"housekeeping_repos,omitempty"`
	Memory            *MemoryResult      `json:"memory,omitempty"`
	Process           *ProcessResult     `json:"process,omitempty"`
	Sandbox           *SandboxResult     `json:"sandbox,omitempty"` // section 9 (-only sandbox)
	Skipped           []string           `json:"skipped"`
	Notes             map[string]string  `json:"notes,omitempty"`
	Extra             map[string]float64 `json:"extra,omitempty"`
}

func main() {
	// The sandbox section starts copies of this binary as each sandbox's
	// init and as a pipeline inside it.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.InitArg:
			os.Exit(sandbox.Init())
		case sandboxHelperArg:
			os.Exit(sandboxHelper(os.Args[2:]))
		}
	}
	out := flag.String("out", "results.json", "write the figures as JSON to this file")
	jobs := flag.Int("jobs", 10000, "queue-core jobs per run (after warm-up)")
	only := flag.String("only", "queue,lifecycle,burst,claim,receiver,housekeeping,housekeeping-repos,memory,process,sandbox", "comma-separated sections to run")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	maxHK := flag.Int("hk-max", 100000, "largest housekeeping size to run")
	plats := flag.String("platforms", "all", "comma-separated platforms of the lifecycle section: github, gitlab, azuredevops, jira-cloud, jira-dc")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	lc, err := lifecycleFor(*plats)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(ctx, *out, *jobs, *only, *maxHK, lc); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, jobs int, only string, maxHK int, lc []benchPlatform) error {
	bin, err := redisserver.FindBinary()
	if err != nil {
		return fmt.Errorf("find redis-server: %w", err)
	}
	dir, err := os.MkdirTemp("", "agentsmithd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := redisserver.Start(ctx, bin, dir)
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	defer func() { _ = srv.Stop() }()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 256})
	defer rdb.Close()

	res := &Results{Started: time.Now().UTC(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), Notes: map[string]string{}}
	if info, err := rdb.Info(ctx, "server").Result(); err == nil {
		res.RedisVersion = infoField(info, "redis_version")
	}
	fmt.Printf("# agentsmithd benchmark\n\n%s, %d CPUs, redis-server %s at %s (started by the bench), %s\n\n",
		res.GoVersion, res.CPUs, res.RedisVersion, srv.Addr(), res.Started.Format(time.RFC3339))

	want := map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		want[strings.TrimSpace(s)] = true
	}
	b := &bench{rdb: rdb, addr: srv.Addr(), res: res, lcPlatforms: lc}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"queue", func(ctx context.Context) error { return b.queueCore(ctx, jobs) }},
		{"lifecycle", b.lifecycle},
		{"burst", b.burst},
		{"claim", b.claimPath},
		{"receiver", b.receiver},
		{"housekeeping", func(ctx context.Context) error { return b.housekeeping(ctx, maxHK) }},
		{"housekeeping-repos", b.housekeepingRepos},
		{"memory", b.memory},
		{"process", b.processes},
		{"sandbox", b.sandboxCost},
	}
	for _, st := range steps {
		if !want[st.name] {
			res.Skipped = append(res.Skipped, st.name+": not selected (-only)")
			continue
		}
		if err := b.flush(ctx); err != nil {
			return err
		}
		if err := st.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	fmt.Printf("## Skipped\n\n")
	for _, s := range res.Skipped {
		fmt.Printf("- %s\n", s)
	}
	fmt.Println()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("figures written to %s\n", out)
	return nil
}

type bench struct {
	rdb  *redis.Client
	addr string
	res  *Results
	// lcPlatforms are the platforms the lifecycle section measures.
	lcPlatforms []benchPlatform
}

func (b *bench) flush(ctx context.Context) error {
	return b.rdb.FlushAll(ctx).Err()
}

// uncounted are commands the bench itself sends to read or reset Redis.
var uncounted = map[string]bool{"info": true, "flushall": true, "flushdb": true, "config|resetstat": true, "hello": true, "client|setinfo": true, "client|setname": true, "ping": true}

// commandStats returns calls per command from INFO commandstats.
func commandStats(ctx context.Context, rdb *redis.Client) (map[string]int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("info commandstats: %w", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[name] = n
			}
		}
	}
	return out, nil
}

// cmdCounter measures Redis commands between start and stop.
type cmdCounter struct {
	rdb    *redis.Client
	before map[string]int64
}

func startCount(ctx context.Context, rdb *redis.Client) (*cmdCounter, error) {
	m, err := commandStats(ctx, rdb)
	if err != nil {
		return nil, err
	}
	return &cmdCounter{rdb: rdb, before: m}, nil
}

// stop returns the total of counted calls and the per-command deltas.
func (c *cmdCounter) stop(ctx context.Context) (int64, map[string]int64, error) {
	after, err := commandStats(ctx, c.rdb)
	if err != nil {
		return 0, nil, err
	}
	var total int64
	d := map[string]int64{}
	for k, v := range after {
		if uncounted[k] {
			continue
		}
		if n := v - c.before[k]; n > 0 {
			d[k] = n
			total += n
		}
	}
	return total, d, nil
}

func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// topCommands formats per-command deltas divided by n, largest first.
func topCommands(d map[string]int64, n float64, max int) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range d {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var parts []string
	for i, e := range all {
		if i == max {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", e.k, float64(e.v)/n))
	}
	return strings.Join(parts, ", ")
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// payload returns a unique ~size-byte job body.
func payload(i, size int) []byte {
	p := "req-" + strconv.Itoa(i) + "-"
	if len(p) >= size {
		return []byte(p)
	}
	return []byte(p + strings.Repeat("x", size-len(p)))
}
