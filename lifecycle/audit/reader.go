package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// pageSize is how many entries one XRANGE/XREVRANGE call reads.
const pageSize = 500

// followBlock is how long one XREAD of Follow blocks; it bounds how late
// Follow notices its context is done (go-redis does not interrupt a read).
const followBlock = time.Second

// Reader reads the audit stream. It never writes.
type Reader struct {
	rdb redis.Cmdable
	key string
}

// NewReader reads keys.Audit().
func NewReader(rdb redis.Cmdable) *Reader { return &Reader{rdb: rdb, key: keys.Audit()} }

// Len is the stream's length.
func (r *Reader) Len(ctx context.Context) (int64, error) {
	n, err := r.rdb.XLen(ctx, r.key).Result()
	if err != nil {
		return 0, fmt.Errorf("audit: length: %w", err)
	}
	return n, nil
}

// Recent returns the newest n entries, newest first.
func (r *Reader) Recent(ctx context.Context, n int) ([]Entry, error) {
	msgs, err := r.rdb.XRevRangeN(ctx, r.key, "+", "-", int64(n)).Result()
	if err != nil {
		return nil, fmt.Errorf("audit: recent: %w", err)
	}
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		out[i] = decode(m)
	}
	return out, nil
}

// History returns the entries of one ticket (matched by platform and id),
// oldest first, appended since since (zero: the whole stream), at most limit
// of the newest (0: all). It scans the stream newest first; see the package
// comment for the cost.
func (r *Reader) History(ctx context.Context, ref platforms.Ref, since time.Time, limit int) ([]Entry, error) {
	var out []Entry
	err := r.scanBack(ctx, since, func(e Entry) bool {
		if e.Event.Ref.Platform == ref.Platform && e.Event.Ref.ID == ref.ID {
			out = append(out, e)
		}
		return limit <= 0 || len(out) < limit
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

// Since calls fn for every entry appended at or after since, oldest first,
// until fn returns false.
func (r *Reader) Since(ctx context.Context, since time.Time, fn func(Entry) bool) error {
	start := "-"
	if !since.IsZero() {
		start = strconv.FormatInt(since.UnixMilli(), 10)
	}
	for {
		msgs, err := r.rdb.XRangeN(ctx, r.key, start, "+", pageSize).Result()
		if err != nil {
			return fmt.Errorf("audit: read: %w", err)
		}
		for _, m := range msgs {
			if !fn(decode(m)) {
				return nil
			}
		}
		if len(msgs) < pageSize {
			return nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// scanBack calls fn for entries newest first down to since, until fn
// returns false.
func (r *Reader) scanBack(ctx context.Context, since time.Time, fn func(Entry) bool) error {
	end, stop := "+", "-"
	if !since.IsZero() {
		stop = strconv.FormatInt(since.UnixMilli(), 10)
	}
	for {
		msgs, err := r.rdb.XRevRangeN(ctx, r.key, end, stop, pageSize).Result()
		if err != nil {
			return fmt.Errorf("audit: read: %w", err)
		}
		for _, m := range msgs {
			if !fn(decode(m)) {
				return nil
			}
		}
		if len(msgs) < pageSize {
			return nil
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
}

// Follow calls fn for every entry appended after the entry with id after
// ("$" or "": only new ones; "0": the whole stream first), blocking between
// entries, until ctx is done (nil) or fn fails (its error).
func (r *Reader) Follow(ctx context.Context, after string, fn func(Entry) error) error {
	if after == "" {
		after = "$"
	}
	if after == "$" {
		// Resolve "$" once: re-sending "$" after a timeout would skip
		// whatever arrived between two XREAD calls.
		last, err := r.rdb.XRevRangeN(ctx, r.key, "+", "-", 1).Result()
		if err != nil {
			return fmt.Errorf("audit: follow: %w", err)
		}
		after = "0-0"
		if len(last) == 1 {
			after = last[0].ID
		}
	}
	for ctx.Err() == nil {
		streams, err := r.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{r.key, after}, Count: pageSize, Block: followBlock}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("audit: follow: %w", err)
		}
		for _, s := range streams {
			for _, m := range s.Messages {
				if err := fn(decode(m)); err != nil {
					return err
				}
				after = m.ID
			}
		}
	}
	return nil
}
