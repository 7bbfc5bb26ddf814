package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
)

// fakeClock is a replica's clock (daemon.Options.Now): the test advances
// it and waits until it is read again, which the outage tracker does on
// every failure it sees and the approval gate on every check of a parked
// ticket's deadline.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	reads int
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.now
}

func (c *fakeClock) advance(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.reads
}

func (c *fakeClock) readsSoFar() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// A 60 s Redis outage under a running replica (every role, the executor
// blocked on the queue, housekeeping and the poller's lease at their short
// test intervals) is three kinds of lines: one when it starts, a reminder
// every 20 s (the injected interval), one when it ends with its duration.
// No loop's own error line for it and no go-redis line is logged above
// debug, and nothing reaches file descriptor 2.
func TestRedisOutageIsOneLineEachWay(t *testing.T) {
	e := newEnv(t)
	e.sim.CreateIssue(e.repo, "an idle ticket", "") // the repository exists: its listings succeed
	obs, logs := observer.New(zap.DebugLevel)
	log := zap.New(obs)
	redisconn.UseZap(log) // as serve does
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	const reminder = 20 * time.Second
	d, err := daemon.New(e.config("a", ""), daemon.Options{Logger: log, OwnRedis: true,
		Now: clock.Now, OutageReminder: reminder, OutageProbe: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	<-d.Listening()
	rdb := e.redis.Client(t)
	eventually.Wait(t, 10*time.Second, "the replica announces itself", func() bool {
		n, _ := rdb.Exists(context.Background(), "agentsmith:instance:a").Result()
		return n == 1 || len(logs.FilterMessage("starting").All()) == 1
	})

	lines := func(prefix string) []observer.LoggedEntry {
		return logs.Filter(func(le observer.LoggedEntry) bool {
			return le.Level >= zapcore.InfoLevel && strings.HasPrefix(le.Message, prefix)
		}).All()
	}
	raw := captureFD2(t, func() {
		before := len(logs.All())
		e.redis.Kill()
		eventually.Wait(t, 10*time.Second, "the outage is reported", func() bool { return len(lines("redis unreachable")) > 0 })
		// Let the loops meet the dead Redis: their error lines are the
		// ones to fold.
		eventually.Wait(t, 20*time.Second, "three loops log the outage", func() bool {
			loops := map[string]bool{}
			for _, le := range logs.All()[before:] {
				if _, ok := le.ContextMap()["error"]; ok && le.LoggerName != "go-redis" && le.LoggerName != "outage" {
					loops[le.LoggerName] = true
				}
			}
			return len(loops) >= 3
		})
		for elapsed := time.Duration(0); elapsed < 60*time.Second; {
			elapsed += 5 * time.Second
			seen := clock.advance(5 * time.Second)
			eventually.Wait(t, 10*time.Second, "a failure seen after the clock moved", func() bool { return clock.readsSoFar() > seen })
		}
		atRestart := len(logs.All())
		e.redis.Restart()
		eventually.Wait(t, 10*time.Second, "the outage's end is reported", func() bool { return len(lines("redis reachable again")) > 0 })
		// What follows the restart (a lease lost with Redis's data) is
		// not the outage's.
		// The replica stopping its owned work once its presence lapses is
		// an act of its own, said once: a real 60 s outage always outlasts
		// the instance TTL, here only when the machine is slow enough for
		// the presence timer to fire after the fake clock has moved past.
		lapses := 0
		for _, le := range logs.All()[before:atRestart] {
			switch {
			case le.Message == "presence: liveness lapsed; stopping owned work":
				lapses++
			case le.Level >= zapcore.WarnLevel && le.LoggerName != "outage":
				t.Errorf("logged at %s during the outage: %s %v (%s)", le.Level, le.Message, le.ContextMap(), le.LoggerName)
			}
		}
		if lapses > 1 {
			t.Errorf("the presence lapse was logged %d times during one outage, want at most once", lapses)
		}
	})
	if got := lines("redis unreachable"); len(got) != 1 {
		t.Errorf("%d start lines, want 1", len(got))
	} else if got[0].ContextMap()["where"] != e.redis.Addr() {
		t.Errorf("start line names %v, want %s", got[0].ContextMap()["where"], e.redis.Addr())
	}
	if got := lines("redis still unreachable"); len(got) != 3 {
		t.Errorf("%d reminders, want 3 (60 s every %s)", len(got), reminder)
	}
	if got := lines("redis reachable again"); len(got) != 1 {
		t.Errorf("%d end lines, want 1", len(got))
	} else if got[0].ContextMap()["lasted"] != time.Minute {
		t.Errorf("end line says the outage lasted %v, want 1m", got[0].ContextMap()["lasted"])
	}
	if strings.Contains(raw, "redis:") || strings.Contains(raw, "pool.go") {
		t.Errorf("raw go-redis lines on stderr:\n%s", raw)
	}
	folded := map[string]int{}
	for _, le := range logs.FilterLevelExact(zapcore.DebugLevel).All() {
		folded[le.LoggerName+": "+le.Message]++
	}
	t.Logf("debug lines: %v", folded)
}

// A 60 s outage of the project's tracker (every call answered 503) under
// a running replica is one start line naming the project and the tracker,
// a reminder every 20 s and one end line with the duration; a revoked
// token (every call answered 401) is one line naming the variable that
// holds it, and one when it is accepted again. No loop's own line for the
// failing calls is logged above debug meanwhile.
func TestTrackerOutageIsOneLineEachWay(t *testing.T) {
	for _, c := range []struct {
		status               int
		start, reminder, end string
		reminders            int
	}{
		{http.StatusServiceUnavailable, "tracker unreachable", "tracker still unreachable", "tracker reachable again", 3},
		{http.StatusUnauthorized, "tracker token refused", "tracker token still refused", "tracker token accepted again", 3},
	} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			e := newEnv(t)
			e.sim.CreateIssue(e.repo, "an idle ticket", "")
			obs, logs := observer.New(zap.DebugLevel)
			clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			const reminder = 20 * time.Second
			d, err := daemon.New(e.config("a", ""), daemon.Options{Logger: zap.New(obs), OwnRedis: true,
				Now: clock.Now, OutageReminder: reminder, OutageProbe: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			defer func() {
				cancel()
				<-done
			}()
			<-d.Listening()
			lines := func(prefix string) []observer.LoggedEntry {
				return logs.Filter(func(le observer.LoggedEntry) bool {
					return le.Level >= zapcore.InfoLevel && strings.HasPrefix(le.Message, prefix)
				}).All()
			}
			eventually.Wait(t, 10*time.Second, "the replica starts", func() bool { return len(logs.FilterMessage("starting").All()) == 1 })
			before := len(logs.All())
			e.simDown.Store(int32(c.status))
			eventually.Wait(t, 20*time.Second, "the outage is reported", func() bool { return len(lines(c.start)) > 0 })
			for elapsed := time.Duration(0); elapsed < 60*time.Second; {
				elapsed += 5 * time.Second
				seen := clock.advance(5 * time.Second)
				eventually.Wait(t, 20*time.Second, "a failure seen after the clock moved", func() bool { return clock.readsSoFar() > seen })
			}
			atEnd := len(logs.All())
			e.simDown.Store(0)
			eventually.Wait(t, 20*time.Second, "the outage's end is reported", func() bool { return len(lines(c.end)) > 0 })
			for _, le := range logs.All()[before:atEnd] {
				if le.Level >= zapcore.WarnLevel && le.LoggerName != "outage" {
					t.Errorf("logged at %s during the outage: %s %v (%s)", le.Level, le.Message, le.ContextMap(), le.LoggerName)
				}
			}
			if got := lines(c.start); len(got) != 1 {
				t.Errorf("%d start lines, want 1", len(got))
			} else if m := got[0].ContextMap(); m["project"] != "app" || (c.status != http.StatusUnauthorized && !strings.HasPrefix(fmt.Sprint(m["where"]), e.simURL)) ||
				(c.status == http.StatusUnauthorized && !strings.Contains(fmt.Sprint(m["where"]), "E2E_TOKEN")) {
				t.Errorf("start line names %v", m)
			}
			if got := lines(c.reminder); len(got) != c.reminders {
				t.Errorf("%d reminders, want %d (60 s every %s)", len(got), c.reminders, reminder)
			}
			if got := lines(c.end); len(got) != 1 {
				t.Errorf("%d end lines, want 1", len(got))
			} else if got[0].ContextMap()["lasted"] != time.Minute {
				t.Errorf("end line says the outage lasted %v, want 1m", got[0].ContextMap()["lasted"])
			}
			folded := map[string]int{}
			for _, le := range logs.FilterLevelExact(zapcore.DebugLevel).All() {
				folded[le.LoggerName+": "+le.Message]++
			}
			t.Logf("debug lines: %v", folded)
		})
	}
}

// captureFD2 runs f with file descriptor 2 pointed at a pipe and returns
// what was written to it.
func captureFD2(t *testing.T, f func()) (out string) {
	t.Helper()
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup2(int(wr.Fd()), 2); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() {
		_ = syscall.Dup2(saved, 2)
		_ = syscall.Close(saved)
		_ = wr.Close()
		out = <-done
	}()
	f()
	return ""
}
