package main

import (
	"bytes"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSlopeTest holds the slope test to what it is for: a flat series, a
// plateau reached early, a GC sawtooth and noise are bounded; a steady
// climb is not, even a slow one under the noise of single samples.
func TestSlopeTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(n int, f func(i int) float64) (xs, ys []float64) {
		for i := range n {
			xs = append(xs, float64(15+i))
			ys = append(ys, f(i))
		}
		return xs, ys
	}
	for _, c := range []struct {
		name  string
		f     func(i int) float64
		grows bool
	}{
		{"flat", func(int) float64 { return 40 }, false},
		{"noise ±3", func(int) float64 { return 40 + 6*(rng.Float64()-0.5) }, false},
		{"sawtooth", func(i int) float64 { return 40 + float64(i%4) }, false},
		{"plateau", func(i int) float64 { return 40 - 5*math.Exp(-float64(i)) }, false},
		{"falling", func(i int) float64 { return 60 - float64(i) }, false},
		{"leak 1/min", func(i int) float64 { return 40 + float64(i) }, true},
		{"leak 0.7/min under noise", func(i int) float64 { return 40 + 0.7*float64(i) + 2*(rng.Float64()-0.5) }, true},
	} {
		xs, ys := mk(16, c.f)
		growth, limit, grows := slopeTest(xs, ys, 0.2, 4)
		if grows != c.grows {
			t.Errorf("%s: growth %.2f, limit %.2f: grows = %v, want %v", c.name, growth, limit, grows, c.grows)
		}
	}
}

// TestJudgeFitsOnlyTheLastIncarnation: a replica restarted in the second
// half starts from a low RSS again; fitting across the restart would read
// the jump as a trend, so only the new process's samples count.
func TestJudgeFitsOnlyTheLastIncarnation(t *testing.T) {
	var ss []soakSample
	for i := range 20 {
		inc, rss := "r1.1", 40+2*float64(i) // climbing: a leak in r1.1
		if i >= 14 {
			inc, rss = "r1.2", 20 // restarted, flat
		}
		ss = append(ss, soakSample{At: time.Duration(i) * time.Minute, Replicas: []procSample{{Inc: inc, RSS: int64(rss * (1 << 20)), FDs: 10, Goroutines: 30}}})
	}
	v := judge(ss, 10*time.Minute, soakSeries(1)[0])
	if v.Grows || v.N != 6 || v.Note == "" {
		t.Errorf("verdict %+v: want 6 samples of r1.2, bounded, noted as restarted", v)
	}
	v = judge(ss[:14], 5*time.Minute, soakSeries(1)[0])
	if !v.Grows {
		t.Errorf("verdict %+v: r1.1 climbs 2 MiB a minute, want GROWS", v)
	}
}

func TestParseRedisInfo(t *testing.T) {
	info := "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n\r\n# Keyspace\r\ndb0:keys=120,expires=100,avg_ttl=0,subexpiry=0\r\n"
	used, keys, expires := parseRedisInfo(info)
	if used != 1<<20 || keys != 120 || expires != 100 {
		t.Errorf("parsed %d, %d, %d; want 1048576, 120, 100", used, keys, expires)
	}
}

// TestSoakShort is the soak cut to seconds: real replicas, a kill -9,
// steady feeding and a sample every second. It checks the sampling reaches
// every process and Redis and that the plot is a PNG; the slope verdicts
// themselves need minutes of samples (TestSlopeTest covers the test).
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	o := SoakOptions(16 * time.Second)
	o.Tickets, o.KillEvery, o.KillWindow, o.StopEvery, o.Sample = 16, 3*time.Second, 5*time.Second, 0, time.Second
	o.Settle, o.Dir = 60*time.Second, keptDir(t, "chaos-soak-short-")
	defer func() {
		if t.Failed() {
			t.Logf("work dir kept: %s", o.Dir)
		}
	}()
	var log bytes.Buffer
	o.Log = &log
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	rep.Print(&table)
	t.Logf("soak figures:\n%s", table.String())
	if err := os.WriteFile(filepath.Join(o.Dir, "report.txt"), table.Bytes(), 0o600); err != nil {
		t.Error(err)
	}
	if rep.Lost > 0 || rep.Overlapping > 0 || len(rep.StaleWrites) > 0 {
		t.Errorf("lost %d, overlapping %d, stale %d: want 0; work dir kept: %s", rep.Lost, rep.Overlapping, len(rep.StaleWrites), o.Dir)
	}
	if rep.Kills == 0 {
		t.Error("no replica was killed")
	}
	f := rep.Soak
	if f == nil || len(f.Samples) < 10 {
		t.Fatalf("soak samples: %+v, want at least 10 (a second apart over 16 s)", f)
	}
	last := f.Samples[len(f.Samples)-1]
	for i, p := range last.Replicas {
		if p.Inc == "" || p.RSS <= 0 || p.FDs <= 0 || p.Goroutines <= 0 {
			t.Errorf("replica %d's last sample %+v: want RSS, fds and goroutines read", i+1, p)
		}
	}
	if last.RedisUsed <= 0 || last.Keys <= 0 || last.Finished == 0 {
		t.Errorf("last sample %+v: want Redis memory and keys read and ended tickets counted", last)
	}
	if len(f.Verdicts) != 3*3+2 {
		t.Errorf("%d verdicts, want 11 (3 series × 3 replicas + 2 Redis)", len(f.Verdicts))
	}
	if f.PlotErr != nil {
		t.Fatal(f.PlotErr)
	}
	pf, err := os.Open(f.Plot)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatalf("plot %s: %v", f.Plot, err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 800 {
		t.Errorf("plot is %v, want a tall multi-panel image", b)
	}
}
