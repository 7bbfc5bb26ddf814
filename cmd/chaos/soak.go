package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/statustoken"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// The soak (make soak) is the chaos run made long and steady: tickets fed
// at one rate for the whole run, replicas killed -9 in its first part,
// tracker faults, duplicated deliveries, hanging pipelines and leader
// SIGSTOPs throughout, and every Options.Sample a sample of what could leak:
// each replica's RSS, open file descriptors and goroutines, and Redis's
// memory and key count. It fails when one of them grows without bound over
// the second half of the run (slopeTest) or a ticket is lost.
//
// Redis keys with a TTL (delivery ids for 24 h, finished marks and run logs
// for 30 days) grow with every ticket for as long as their TTL and then
// stop: Redis bounds them, and a 30-minute run cannot tell that from a
// leak. So the slope test watches what nothing bounds: the keys without a
// TTL (INFO keyspace keys − expires), which must not accumulate, and
// Redis's bytes per key, which grows only when some key (a list, a hash, a
// stream) grows without bound. Total keys and memory are sampled and
// plotted too, for the reader.

// SoakOptions is the soak of length d: a ticket every 2 s, a kill -9 every
// 2 minutes in the first 40 % (so every replica's second half is one
// process whose series the slope test can read), a leader SIGSTOP every 5
// minutes, tracker faults and hanging pipelines all along, a sample a
// minute.
func SoakOptions(d time.Duration) Options {
	return Options{Tickets: int(d / (2 * time.Second)), Duration: d, Settle: 2 * time.Minute, Seed: 1,
		KillEvery: 2 * time.Minute, KillWindow: d * 4 / 10, StopEvery: 5 * time.Minute, StopFor: 4 * time.Second,
		Duplicate: 1, TrackerFault: true, Hang: true, FeedAll: true, Sample: time.Minute, Plot: "soak.png"}
}

// procSample is one replica at one sample time.
type procSample struct {
	Inc        string // the incarnation sampled ("" when none was running)
	RSS        int64  // bytes, VmRSS from /proc
	FDs        int    // entries of /proc/PID/fd
	Goroutines int    // go_goroutines from /metrics; -1 when it did not answer
}

// soakSample is everything sampled at one moment.
type soakSample struct {
	At        time.Duration // since the run started
	Finished  int           // tickets Done or Failed on the tracker
	Replicas  []procSample  // by slot - 1
	RedisUsed int64         // INFO memory used_memory
	Keys      int64         // INFO keyspace db0 keys
	Expires   int64         // … of which have a TTL
}

// sampleWorld reads every series once; a replica or Redis that does not
// answer leaves its fields zero (or Goroutines -1), which the slope test
// skips.
func sampleWorld(ctx context.Context, w *world, rdb *redis.Client, at time.Duration) soakSample {
	s := soakSample{At: at, Finished: countTerminal(w)}
	w.mu.Lock()
	rs := append([]*replica(nil), w.replicas...)
	w.mu.Unlock()
	for _, r := range rs {
		w.mu.Lock()
		alive, inc := r.alive, r.inc
		pid := 0
		if r.cmd != nil && r.cmd.Process != nil {
			pid = r.cmd.Process.Pid
		}
		w.mu.Unlock()
		ps := procSample{Goroutines: -1}
		if alive && pid > 0 {
			ps.Inc = inc
			ps.RSS = vmRSS(pid)
			if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				ps.FDs = len(fds)
			}
			// serve keeps the admin token beside the incarnation's config.
			token, _ := statustoken.Read(statustoken.Path(filepath.Join(w.dir, inc+".yaml")))
			ps.Goroutines = goroutines(ctx, adminAddr(filepath.Join(w.dir, inc+".log")), token)
		}
		s.Replicas = append(s.Replicas, ps)
	}
	if info, err := rdb.Info(ctx, "memory", "keyspace").Result(); err == nil {
		s.RedisUsed, s.Keys, s.Expires = parseRedisInfo(info)
	}
	return s
}

// vmRSS is the resident set of pid in bytes (0 when unreadable).
func vmRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// adminAddr is the admin listener's address an incarnation logged when it
// started listening ("listening" with admin_addr), or "" before that.
func adminAddr(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"admin_addr"`)) {
			continue
		}
		var l struct {
			Msg       string `json:"msg"`
			AdminAddr string `json:"admin_addr"`
		}
		if json.Unmarshal(line, &l) == nil && l.Msg == "listening" {
			return l.AdminAddr
		}
	}
	return ""
}

// goroutines scrapes go_goroutines from the replica's /metrics at addr
// with its admin token (-1 when it does not answer within 2 s, as a
// SIGSTOPped replica does not).
func goroutines(ctx context.Context, addr, token string) int {
	if addr == "" {
		return -1
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return -1
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int(f)
			}
		}
	}
	return -1
}

// parseRedisInfo reads used_memory and db0's keys and expires from INFO.
func parseRedisInfo(info string) (used, keys, expires int64) {
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "db0:"); ok {
			for _, kv := range strings.Split(v, ",") {
				k, n, _ := strings.Cut(kv, "=")
				switch k {
				case "keys":
					keys, _ = strconv.ParseInt(n, 10, 64)
				case "expires":
					expires, _ = strconv.ParseInt(n, 10, 64)
				}
			}
		}
	}
	return used, keys, expires
}

// countTerminal counts the tracker's issues labelled Done or Failed.
func countTerminal(w *world) int {
	n := 0
	for _, is := range w.sim.Issues() {
		if has(is.Labels, lifecycle.Done) || has(is.Labels, lifecycle.Failed) {
			n++
		}
	}
	return n
}

// sampleLoop samples at once and then every interval until ctx ends, and
// once more at the end.
func sampleLoop(ctx context.Context, w *world, addr string, every time.Duration, start time.Time) []soakSample {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	// Samples outlive ctx by one last reading, taken with a fresh deadline.
	bg := context.WithoutCancel(ctx)
	var out []soakSample
	for {
		out = append(out, sampleWorld(bg, w, rdb, time.Since(start)))
		if !sleepCtx(ctx, every) {
			out = append(out, sampleWorld(bg, w, rdb, time.Since(start)))
			return out
		}
	}
}

// series is one sampled quantity the slope test judges.
type series struct {
	Name, Unit string
	// RelTol and Floor bound the growth the fitted line may show across the
	// second half: more than max(RelTol × mean, Floor) is unbounded growth.
	RelTol, Floor float64
	// value reads the quantity from a sample; ok false skips the sample,
	// key names the process it came from (a change means a restart).
	value func(s soakSample) (v float64, key string, ok bool)
}

// soakSeries are the quantities judged. The floors are what noise alone
// reaches in a short window: RSS breathes with the garbage collector by a
// few MiB, goroutines and descriptors with the runs in flight (each run
// holds its pipes, a heartbeat and a guard).
func soakSeries(replicas int) []series {
	var out []series
	for i := range replicas {
		slot := i + 1
		proc := func(f func(procSample) (float64, bool)) func(soakSample) (float64, string, bool) {
			return func(s soakSample) (float64, string, bool) {
				if i >= len(s.Replicas) || s.Replicas[i].Inc == "" {
					return 0, "", false
				}
				v, ok := f(s.Replicas[i])
				return v, s.Replicas[i].Inc, ok
			}
		}
		out = append(out,
			series{Name: fmt.Sprintf("replica %d RSS", slot), Unit: "MiB", RelTol: 0.2, Floor: 4,
				value: proc(func(p procSample) (float64, bool) { return float64(p.RSS) / (1 << 20), p.RSS > 0 })},
			series{Name: fmt.Sprintf("replica %d goroutines", slot), Unit: "", RelTol: 0.2, Floor: 60,
				value: proc(func(p procSample) (float64, bool) { return float64(p.Goroutines), p.Goroutines >= 0 })},
			series{Name: fmt.Sprintf("replica %d open fds", slot), Unit: "", RelTol: 0.2, Floor: 20,
				value: proc(func(p procSample) (float64, bool) { return float64(p.FDs), p.FDs > 0 })})
	}
	out = append(out,
		series{Name: "Redis keys without TTL", Unit: "", RelTol: 0.2, Floor: 20,
			value: func(s soakSample) (float64, string, bool) {
				return float64(s.Keys - s.Expires), "redis", s.RedisUsed > 0
			}},
		series{Name: "Redis bytes per key", Unit: "B", RelTol: 0.2, Floor: 256,
			value: func(s soakSample) (float64, string, bool) {
				if s.Keys == 0 {
					return 0, "", false
				}
				return float64(s.RedisUsed) / float64(s.Keys), "redis", true
			}})
	return out
}

// verdict is the slope test's finding for one series.
type verdict struct {
	Series, Unit        string
	N                   int     // samples fitted
	Mean, Growth, Limit float64 // growth of the fitted line across the window
	PerHour             float64 // the fitted slope
	Grows               bool
	Note                string
}

// judge runs the slope test over the samples taken at or after from. A
// process series uses only the samples of the incarnation sampled last, so
// a restart does not read as growth; fewer than 4 samples give no verdict.
func judge(ss []soakSample, from time.Duration, sr series) verdict {
	v := verdict{Series: sr.Name, Unit: sr.Unit}
	var xs, ys []float64
	last := ""
	for _, s := range ss {
		if s.At < from {
			continue
		}
		y, key, ok := sr.value(s)
		if !ok {
			continue
		}
		if key != last && last != "" {
			xs, ys = xs[:0], ys[:0]
			v.Note = "restarted in the second half; fitted after the restart"
		}
		last = key
		xs = append(xs, s.At.Minutes())
		ys = append(ys, y)
	}
	v.N = len(xs)
	if v.N < 4 {
		v.Note = strings.TrimPrefix(v.Note+"; too few samples to judge", "; ")
		return v
	}
	slope, mean := leastSquares(xs, ys)
	v.Mean = mean
	v.PerHour = slope * 60
	v.Growth, v.Limit, v.Grows = slopeTest(xs, ys, sr.RelTol, sr.Floor)
	return v
}

// slopeTest fits a line to (xs, ys) by least squares and reports its growth
// across the window (slope × span) and whether that exceeds
// max(relTol × |mean|, floor): a series bounded by a plateau, a sawtooth or
// noise stays under it, one that climbs steadily does not.
func slopeTest(xs, ys []float64, relTol, floor float64) (growth, limit float64, grows bool) {
	if len(xs) < 2 {
		return 0, floor, false
	}
	slope, mean := leastSquares(xs, ys)
	growth = slope * (xs[len(xs)-1] - xs[0])
	limit = math.Max(relTol*math.Abs(mean), floor)
	return growth, limit, growth > limit
}

// leastSquares is the slope of the least-squares line through the points,
// and the mean of ys.
func leastSquares(xs, ys []float64) (slope, mean float64) {
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, my
	}
	return sxy / sxx, my
}

// soakFigures are the soak's samples, verdicts and plot.
type soakFigures struct {
	Samples  []soakSample
	Verdicts []verdict
	Plot     string // the PNG written ("" when none)
	PlotErr  error
}

func (f *soakFigures) ok() bool {
	if f == nil {
		return true
	}
	for _, v := range f.Verdicts {
		if v.Grows {
			return false
		}
	}
	return true
}

// newSoakFigures judges the samples over the second half of a run of
// length d and writes the plot to plot (relative to dir) when it is set.
func newSoakFigures(ss []soakSample, d time.Duration, dir, plot string) *soakFigures {
	f := &soakFigures{Samples: ss}
	replicas := 0
	for _, s := range ss {
		replicas = max(replicas, len(s.Replicas))
	}
	for _, sr := range soakSeries(replicas) {
		f.Verdicts = append(f.Verdicts, judge(ss, d/2, sr))
	}
	if plot != "" {
		if !filepath.IsAbs(plot) {
			plot = filepath.Join(dir, plot)
		}
		f.Plot, f.PlotErr = plot, writeSoakPlot(plot, ss)
	}
	return f
}

// print writes the samples and the verdicts as Markdown tables.
func (f *soakFigures) print(w io.Writer) {
	if f == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| t (min) | tickets ended | RSS MiB (r1 / r2 / r3) | goroutines | open fds | Redis MiB | Redis keys | without TTL |\n|---:|---:|---|---|---|---:|---:|---:|\n")
	for _, s := range f.Samples {
		var rss, gor, fds []string
		for _, p := range s.Replicas {
			if p.Inc == "" {
				rss, gor, fds = append(rss, "–"), append(gor, "–"), append(fds, "–")
				continue
			}
			rss = append(rss, fmt.Sprintf("%.1f", float64(p.RSS)/(1<<20)))
			g := "–"
			if p.Goroutines >= 0 {
				g = strconv.Itoa(p.Goroutines)
			}
			gor = append(gor, g)
			fds = append(fds, strconv.Itoa(p.FDs))
		}
		fmt.Fprintf(w, "| %.1f | %d | %s | %s | %s | %.2f | %d | %d |\n", s.At.Minutes(), s.Finished,
			strings.Join(rss, " / "), strings.Join(gor, " / "), strings.Join(fds, " / "),
			float64(s.RedisUsed)/(1<<20), s.Keys, s.Keys-s.Expires)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| series (second half) | samples | mean | fitted growth | limit | per hour | verdict |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, v := range f.Verdicts {
		verdict := "bounded"
		switch {
		case v.Grows:
			verdict = "GROWS"
		case v.N < 4:
			verdict = "not judged"
		}
		if v.Note != "" {
			verdict += " (" + v.Note + ")"
		}
		fmt.Fprintf(w, "| %s | %d | %.1f %s | %+.1f | %.1f | %+.1f | %s |\n", v.Series, v.N, v.Mean, v.Unit, v.Growth, v.Limit, v.PerHour, verdict)
	}
	switch {
	case f.PlotErr != nil:
		fmt.Fprintf(w, "\nplot: %v\n", f.PlotErr)
	case f.Plot != "":
		fmt.Fprintf(w, "\nplot: %s\n", f.Plot)
	}
}
