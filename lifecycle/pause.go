package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/redisconn"
)

// Pause is a paused project's pause key, as `agentsmithctl status` and the
// status page show it.
type Pause struct {
	Project string    `json:"project"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

// PauseProject pauses a project's queue: from now on consumers start no run
// of its requests. Claims still enqueue (the ticket goes to Enqueued and
// its request waits), runs in flight finish, and the EnqueuedReconciler
// leaves the waiting requests alone (they are in the delayed set). by
// says who paused it (an operator's name, "agentsmithctl@host", "status
// page"). Pausing a paused project only updates who and when.
func PauseProject(ctx context.Context, rdb redis.Cmdable, project, by string, at time.Time) error {
	v, _ := json.Marshal(Pause{By: by, At: at.UTC()}) // strings and a time: cannot fail
	if err := rdb.Set(ctx, keys.Paused(project), v, 0).Err(); err != nil {
		return fmt.Errorf("pause %s: %w", project, err)
	}
	return nil
}

// ResumeProject lifts a project's pause and makes its requests that wait in
// the delayed set for the pause due now, so the DelayedPromoter puts them
// back on their levels within its interval. It reports whether the project
// was paused and how many requests it made due. Requests waiting out a
// retry backoff or a concurrency limit keep their due time.
func ResumeProject(ctx context.Context, rdb redis.UniversalClient, project string) (wasPaused bool, due int, err error) {
	n, err := rdb.Del(ctx, keys.Paused(project)).Result()
	if err != nil {
		return false, 0, fmt.Errorf("resume %s: %w", project, err)
	}
	due, err = MakePausedDue(ctx, rdb, keys.Delayed(), project)
	return n == 1, due, err
}

// MakePausedDue makes project's delayed requests that were put aside for a
// pause (PausedAside) due now, by Redis's clock (queue.MakeDue: an entry's
// due time only moves earlier and one promoted meanwhile is not added
// back, so nothing is duplicated); requests delayed for other reasons keep
// theirs.
func MakePausedDue(ctx context.Context, rdb redis.UniversalClient, delayedKey, project string) (int, error) {
	entries, err := rdb.ZRange(ctx, delayedKey, 0, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("resume %s: read %s: %w", project, delayedKey, err)
	}
	var mine [][]byte
	for _, e := range entries {
		req, err := DecodeRequest([]byte(e))
		if err != nil || req.Ref.Project != project || !req.PausedAside {
			continue
		}
		mine = append(mine, []byte(e))
	}
	if len(mine) == 0 {
		return 0, nil
	}
	n, err := queue.MakeDue(ctx, rdb, delayedKey, mine)
	if err != nil {
		return 0, fmt.Errorf("resume %s: make requests due: %w", project, err)
	}
	return n, nil
}

// PausedProjects lists the paused projects, by name.
func PausedProjects(ctx context.Context, rdb redis.UniversalClient) ([]Pause, error) {
	ks, err := redisconn.ScanKeys(ctx, rdb, keys.PausedPattern())
	if err != nil {
		return nil, fmt.Errorf("list paused projects: %w", err)
	}
	out := []Pause{}
	for _, k := range ks {
		v, err := rdb.Get(ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			continue // resumed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("list paused projects: %w", err)
		}
		p := Pause{Project: keys.PausedProject(k)}
		_ = json.Unmarshal([]byte(v), &p) // a hand-set value still pauses
		p.Project = keys.PausedProject(k)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Pause) int { return strings.Compare(a.Project, b.Project) })
	return out, nil
}

// ProjectPaused reports whether project's queue is paused.
func ProjectPaused(ctx context.Context, rdb redis.Cmdable, project string) (bool, error) {
	n, err := rdb.Exists(ctx, keys.Paused(project)).Result()
	if err != nil {
		return false, fmt.Errorf("read pause of %s: %w", project, err)
	}
	return n == 1, nil
}
