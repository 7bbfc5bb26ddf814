package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// MaxListedParked bounds ListParked: the status page and agentsmithctl
// show the longest-waiting tickets, and say how many there are in all.
const MaxListedParked = 200

// MaxParkedTitle bounds the ticket title the index keeps, in bytes.
const MaxParkedTitle = 200

// ParkedEntry is a ticket parked in AwaitingApproval as the parked index
// (keys.Parked, keys.ParkedInfo) keeps it.
type ParkedEntry struct {
	Ref platforms.Ref `json:"ref"`
	// Stage is the gated stage the ticket awaits approval for.
	Stage string `json:"stage"`
	// Title is the tracker's title when parked: anyone who can open an
	// issue wrote it, so it is only ever shown as text.
	Title string `json:"title,omitempty"`
	// Since is when the ticket was parked (keys.GateParked).
	Since time.Time `json:"since"`
	// Escalated: the gate's deadline passed and escalated this parking
	// (keys.GateEscalated); read by ListParked, not stored.
	Escalated bool `json:"escalated,omitempty"`
}

// ParkedStamp is how keys.GateParked and keys.GateEscalated write the time
// a ticket was parked.
func ParkedStamp(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }

// Park records that e.Ref was parked at e.Since: keys.GateParked, from
// which its gate's deadline counts, and its entry in the parked index, in
// one MULTI.
func Park(ctx context.Context, rdb redis.UniversalClient, e ParkedEntry) error {
	_, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		ParkOn(ctx, pipe, e)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record %s as parked: %w", e.Ref, err)
	}
	return nil
}

// ParkOn is Park queued on pipe.
func ParkOn(ctx context.Context, pipe redis.Pipeliner, e ParkedEntry) {
	e.Since = e.Since.UTC()
	e.Title = boundTitle(e.Title)
	e.Escalated = false
	b, _ := json.Marshal(e) // strings and a time: cannot fail
	k := e.Ref.Key()
	pipe.Set(ctx, keys.GateParked(k), ParkedStamp(e.Since), keys.GateTTL)
	pipe.ZAdd(ctx, keys.Parked(), redis.Z{Score: float64(e.Since.UnixMilli()), Member: k})
	pipe.HSet(ctx, keys.ParkedInfo(), k, b)
}

// Unpark drops ref's keys.GateParked and its entry in the parked index: a
// decision moved it, or it is no longer parked.
func Unpark(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref) error {
	_, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		UnparkOn(ctx, pipe, ref)
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop %s from the parked: %w", ref, err)
	}
	return nil
}

// UnparkOn is Unpark queued on pipe.
func UnparkOn(ctx context.Context, pipe redis.Pipeliner, ref platforms.Ref) {
	k := ref.Key()
	pipe.Del(ctx, keys.GateParked(k))
	pipe.ZRem(ctx, keys.Parked(), k)
	pipe.HDel(ctx, keys.ParkedInfo(), k)
}

// ListParked lists the parked tickets, longest waiting first, at most
// limit (MaxListedParked when limit is out of range), and how many there
// are: one ZRANGE and ZCARD, one HMGET and a GET of keys.GateEscalated per
// ticket listed, in one pipeline. An index entry without its info (none
// is written apart) is left out.
func ListParked(ctx context.Context, rdb redis.UniversalClient, limit int) ([]ParkedEntry, int64, error) {
	if limit <= 0 || limit > MaxListedParked {
		limit = MaxListedParked
	}
	var (
		members *redis.StringSliceCmd
		total   *redis.IntCmd
	)
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		members = pipe.ZRange(ctx, keys.Parked(), 0, int64(limit-1))
		total = pipe.ZCard(ctx, keys.Parked())
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list parked tickets: %w", err)
	}
	out := []ParkedEntry{}
	ks := members.Val()
	if len(ks) == 0 {
		return out, total.Val(), nil
	}
	esc := make([]*redis.StringCmd, len(ks))
	var infos *redis.SliceCmd
	_, err = rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		infos = pipe.HMGet(ctx, keys.ParkedInfo(), ks...)
		for i, k := range ks {
			esc[i] = pipe.Get(ctx, keys.GateEscalated(k))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("read parked tickets: %w", err)
	}
	for i, v := range infos.Val() {
		s, _ := v.(string)
		var e ParkedEntry
		if s == "" || json.Unmarshal([]byte(s), &e) != nil || e.Ref.ID == "" {
			continue
		}
		e.Escalated = escalatedFor(e, esc[i].Val())
		out = append(out, e)
	}
	return out, total.Val(), nil
}

// CountParked counts the parked tickets by project, from the parked
// index's info (one HVALS): the metrics read it at scrape time.
func CountParked(ctx context.Context, rdb redis.UniversalClient) (map[string]int, error) {
	vals, err := rdb.HVals(ctx, keys.ParkedInfo()).Result()
	if err != nil {
		return nil, fmt.Errorf("count parked tickets: %w", err)
	}
	out := map[string]int{}
	for _, s := range vals {
		var e ParkedEntry
		if json.Unmarshal([]byte(s), &e) == nil && e.Ref.ID != "" {
			out[e.Ref.Project]++
		}
	}
	return out, nil
}

// ParkedOf is the entry of each ticket of project in the parked index, by
// ticket key (the GateKeeper's mending reads it).
func ParkedOf(ctx context.Context, rdb redis.UniversalClient, project string) (map[string]ParkedEntry, error) {
	all, err := rdb.HGetAll(ctx, keys.ParkedInfo()).Result()
	if err != nil {
		return nil, fmt.Errorf("read parked tickets: %w", err)
	}
	out := map[string]ParkedEntry{}
	for k, s := range all {
		var e ParkedEntry
		if json.Unmarshal([]byte(s), &e) == nil && e.Ref.Project == project {
			out[k] = e
		}
	}
	return out, nil
}

// boundTitle is a title as the index keeps it: control characters
// stripped, at most MaxParkedTitle bytes on a rune boundary.
func boundTitle(s string) string {
	s = strings.ToValidUTF8(StripControl(s), "")
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "\t", " ")
	if len(s) <= MaxParkedTitle {
		return s
	}
	cut := MaxParkedTitle
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// ParkedFor is ref's entry in the parked index, if it has one, with
// whether its parking escalated.
func ParkedFor(ctx context.Context, rdb redis.UniversalClient, ref platforms.Ref) (ParkedEntry, bool, error) {
	var info, esc *redis.StringCmd
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		info = pipe.HGet(ctx, keys.ParkedInfo(), ref.Key())
		esc = pipe.Get(ctx, keys.GateEscalated(ref.Key()))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return ParkedEntry{}, false, fmt.Errorf("read %s's parking: %w", ref, err)
	}
	var e ParkedEntry
	if json.Unmarshal([]byte(info.Val()), &e) != nil || e.Ref.ID == "" {
		return ParkedEntry{}, false, nil
	}
	e.Escalated = escalatedFor(e, esc.Val())
	return e, true, nil
}

// escalatedFor: keys.GateEscalated, read as v, names e's parking.
func escalatedFor(e ParkedEntry, v string) bool { return v != "" && v == ParkedStamp(e.Since) }
