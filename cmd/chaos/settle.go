package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// settleFigures say how the tickets ended once the faults stopped. A
// loaded machine makes every step slower, so a ticket that ends after the
// settle deadline is slow, not lost: the run watches the tickets still open
// at the deadline for a grace as long again and tells them apart. Only a
// ticket still open at the end of the grace is lost.
//
// The grace is the bound on slowness. No fault runs during it and the
// daemon's repairs work on a cadence of seconds (enqueued_grace 2 s,
// slow_interval 1 s, heartbeat_ttl 3 s, claim_lock_ttl 5 s in timingsYAML),
// so a ticket a repair would pick up ends within seconds of CPU time; one
// still open another whole settle period later waits on nothing that will
// come, and fails the run.
type settleFigures struct {
	Deadline time.Time
	Grace    time.Duration
	// Slow are the tickets open at the deadline that ended within the
	// grace, each with how long after the deadline it was first seen
	// terminal; Lost the ones open at the end of the grace, each with its
	// diagnosis (lostDiagnosis).
	Slow []lateTicket
	Lost []lateTicket
}

// lateTicket is one ticket not terminal at the settle deadline.
type lateTicket struct {
	t *ticket
	// Late is how long after the deadline the ticket was first seen
	// terminal (slow), or how long past the deadline it was watched (lost).
	Late time.Duration
	// State is the lifecycle state its labels showed last.
	State lifecycle.State
	Lost  bool
	// Diag are the diagnosis lines of a lost ticket (lostDiagnosis).
	Diag []string
}

// watchSettle polls the tracker every poll until every ticket is terminal
// or until deadline+grace, and returns when each ticket was first seen
// terminal. A ticket ending is read from the sim, not from the daemon.
func watchSettle(ctx context.Context, w *world, tickets []*ticket, deadline time.Time, grace, poll time.Duration) (endedAt map[string]time.Time, states map[string][]string) {
	endedAt = map[string]time.Time{}
	end := deadline.Add(grace)
	for {
		now := time.Now()
		states = map[string][]string{}
		for _, is := range w.sim.Issues() {
			states[ticketID(is)] = is.Labels
		}
		open := 0
		for _, t := range tickets {
			if atRest(states[t.id]) && !w.approver.waitsOnDecision(states[t.id]) {
				if _, ok := endedAt[t.id]; !ok {
					endedAt[t.id] = now
				}
				continue
			}
			// A ticket open again (the rollback can restore an older
			// state) has not ended.
			delete(endedAt, t.id)
			open++
		}
		if open == 0 || !now.Before(end) || ctx.Err() != nil {
			return endedAt, states
		}
		sleepCtx(ctx, poll) // polling the tracker's state with a deadline
	}
}

// classifySettle splits the tickets not terminal at deadline into slow
// (ended later, at endedAt) and lost (not ended by the last look, at
// watchedTo), each ordered by id.
func classifySettle(tickets []*ticket, endedAt map[string]time.Time, states map[string][]string, deadline, watchedTo time.Time) (slow, lost []lateTicket) {
	for _, t := range tickets {
		at, ended := endedAt[t.id]
		switch {
		case ended && !at.After(deadline):
		case ended:
			slow = append(slow, lateTicket{t: t, Late: at.Sub(deadline), State: stateOf(states[t.id])})
		default:
			lost = append(lost, lateTicket{t: t, Late: watchedTo.Sub(deadline), State: stateOf(states[t.id]), Lost: true})
		}
	}
	byID := func(a, b lateTicket) int { return strings.Compare(a.t.id, b.t.id) }
	slices.SortFunc(slow, byID)
	slices.SortFunc(lost, byID)
	return slow, lost
}

// String is the ticket's line in the report.
func (l lateTicket) String() string {
	if !l.Lost {
		return fmt.Sprintf("%s (%s): slow, ended %s +%s after the deadline", l.t.id, l.t.source, l.State, l.Late.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%s (%s): lost, not terminal %s after the deadline, state %s", l.t.id, l.t.source, l.Late.Round(100*time.Millisecond), l.State)
}

// diagKeyLimit bounds what one Redis value adds to a diagnosis line.
const diagKeyLimit = 400

// lostDiagnosis is what can show which repair missed a lost ticket: its
// labels and last label writes on the sim, where its request is in Redis
// (queue levels, processing lists, the delayed set), its claim lock,
// heartbeat, in-flight and attempt records, tracker refusal backoff,
// cancel and stuck flags, and its last audit events.
func lostDiagnosis(ctx context.Context, w *world, rdb redis.UniversalClient, t *ticket) []string {
	ref := platforms.Ref{Platform: t.p.Case.Name, Project: t.p.name, ID: t.id}
	k := ref.Key()
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if is, ok := w.sim.Issue(t.p.Repo, t.n); ok {
		add("sim: open %v, labels %v, updated %s", is.Open, is.Labels, is.UpdatedAt.Format("15:04:05.000"))
	}
	var writes []string
	for _, wr := range w.sim.Writes() {
		if wr.Repo == t.p.Repo && wr.Number == t.n {
			writes = append(writes, fmt.Sprintf("%s by %s: %v → %v", wr.At.Format("15:04:05.000"), wr.Writer, lc(wr.Before), lc(wr.After)))
		}
	}
	for _, s := range writes[max(len(writes)-6, 0):] {
		add("sim write: %s", s)
	}
	for _, l := range replicaLogLines(w.dir, t.id, 12) {
		add("log %s", l)
	}
	if rdb == nil {
		return out
	}
	// Where its request is: a request names the ticket as "id":"<id>".
	needle := `"id":"` + t.id + `"`
	where := []string{}
	for _, l := range requestLists(ctx, rdb) {
		vs, _ := rdb.LRange(ctx, l, 0, -1).Result()
		for _, v := range vs {
			if strings.Contains(v, needle) {
				where = append(where, l)
			}
		}
	}
	ds, _ := rdb.ZRangeWithScores(ctx, keys.Delayed(), 0, -1).Result()
	for _, z := range ds {
		if s, _ := z.Member.(string); strings.Contains(s, needle) {
			// The score is Redis's clock (queue.Delay), not a replica's.
			due := time.UnixMilli(int64(z.Score))
			where = append(where, fmt.Sprintf("%s (due %s by Redis's clock, %s from now)", keys.Delayed(), due.Format("15:04:05.000"), time.Until(due).Truncate(time.Second)))
		}
	}
	if len(where) == 0 {
		add("redis: no request on any queue level, processing list or the delayed set")
	} else {
		add("redis: request in %s", strings.Join(where, ", "))
	}
	runKeys, runHashes := runstate.DiagnosticKeys(k)
	for _, key := range append(append([]string{keys.ClaimLock(ref.Platform, ref.ID), keys.TrackerRefusal(k)}, runKeys...),
		keys.StuckFlag(k, lifecycle.Enqueued.String()), keys.StuckFlag(k, lifecycle.InProgress.String()), keys.Paused(t.p.name)) {
		add("redis: %s", describeKey(ctx, rdb, key))
	}
	for _, h := range runHashes {
		v, err := rdb.HGet(ctx, h, k).Result()
		switch {
		case err == redis.Nil:
			add("redis: %s[%s] absent", h, k)
		case err != nil:
			add("redis: %s[%s]: %v", h, k, err)
		default:
			add("redis: %s[%s] = %s", h, k, clip(v))
		}
	}
	live := scanAll(ctx, rdb, keys.InstancePattern())
	sort.Strings(live)
	add("redis: live instances %v", live)
	es, err := audit.NewReader(rdb).History(ctx, ref, time.Time{}, 8)
	if err != nil {
		add("audit: %v", err)
	}
	for _, e := range es {
		ev := e.Event
		add("audit %s: %s %s→%s outcome %q owner %s instance %s source %s reason %q", ev.At.Local().Format("15:04:05.000"),
			ev.Kind, ev.From, ev.To, ev.Outcome, ev.Owner, ev.Instance, ev.Source, clip(ev.Reason))
	}
	return out
}

// describeKey is one key's type, value (clipped) and time to live.
func describeKey(ctx context.Context, rdb redis.UniversalClient, key string) string {
	typ, err := rdb.Type(ctx, key).Result()
	if err != nil {
		return fmt.Sprintf("%s: %v", key, err)
	}
	var val any
	switch typ {
	case "none":
		return key + " absent"
	case "string":
		val, _ = rdb.Get(ctx, key).Result()
	case "hash":
		val, _ = rdb.HGetAll(ctx, key).Result()
	case "list":
		val, _ = rdb.LRange(ctx, key, 0, 9).Result()
	case "set":
		val, _ = rdb.SRandMemberN(ctx, key, 10).Result()
	case "zset":
		val, _ = rdb.ZRangeWithScores(ctx, key, 0, 9).Result()
	default:
		val = "(" + typ + ")"
	}
	ttl, _ := rdb.PTTL(ctx, key).Result()
	return fmt.Sprintf("%s = %s (ttl %s)", key, clip(fmt.Sprint(val)), ttl)
}

func clip(s string) string {
	if len(s) > diagKeyLimit {
		return s[:diagKeyLimit] + "…"
	}
	return s
}

func scanAll(ctx context.Context, rdb redis.UniversalClient, pattern string) []string {
	var out []string
	iter := rdb.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out
}

// replicaLogLines are the last n lines of the replica logs in dir that name
// ticket id, ordered by their timestamps, each prefixed by its log's name
// and clipped.
func replicaLogLines(dir, id string, n int) []string {
	needle := `"ticketId":"` + id + `"`
	paths, _ := filepath.Glob(filepath.Join(dir, "r*.log"))
	type line struct{ ts, text string }
	var lines []line
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if !strings.Contains(l, needle) {
				continue
			}
			ts := ""
			if _, rest, ok := strings.Cut(l, `"ts":"`); ok {
				ts, _, _ = strings.Cut(rest, `"`)
			}
			lines = append(lines, line{ts, filepath.Base(path) + ": " + clip(l)})
		}
		f.Close()
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].ts < lines[j].ts })
	var out []string
	for _, l := range lines[max(len(lines)-n, 0):] {
		out = append(out, l.text)
	}
	return out
}
