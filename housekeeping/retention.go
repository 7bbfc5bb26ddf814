package housekeeping

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
)

// Retention defaults (config consumer.output.retention).
const (
	DefaultRetentionMaxAge   = 7 * 24 * time.Hour
	DefaultRetentionMaxBytes = 10 << 30
	DefaultRetentionInterval = 10 * time.Minute
)

// RetentionConfig configures a Retention.
type RetentionConfig struct {
	// Roots are the directories laid out {root}/{project}/{ticket}: the
	// work root and, when set apart, the logs dir.
	Roots    []string
	MaxAge   time.Duration
	MaxBytes int64
	Interval time.Duration
	Clock    func() time.Time
	Logger   *zap.Logger
}

// Retention removes finished tickets' work dirs and logs from this
// replica's disk: a ticket untouched for MaxAge goes, and while the rest
// exceeds MaxBytes the least recently touched go first. Unlike the other
// housekeeping services it runs on every consumer replica, not only the
// leader, because the files are local. A ticket is finished when Redis no
// longer counts its attempts (runstate.Unfinished): a ticket between attempts
// keeps its work dir for the next one.
type Retention struct {
	cfg RetentionConfig
	rdb redis.UniversalClient
}

// NewRetention applies defaults to cfg.
func NewRetention(rdb redis.UniversalClient, cfg RetentionConfig) *Retention {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultRetentionMaxAge
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultRetentionMaxBytes
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultRetentionInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Retention{cfg: cfg, rdb: rdb}
}

// Run sweeps every Interval until ctx is done.
func (r *Retention) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("retention sweep", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ticketDir is one {root}/{project}/{ticket} directory.
type ticketDir struct {
	path    string
	name    string
	touched time.Time // newest modification inside
	size    int64
}

// Sweep removes what is due and returns the directories removed. Without
// an answer from Redis it removes nothing: it cannot tell running tickets.
func (r *Retention) Sweep(ctx context.Context) ([]string, error) {
	active, err := runstate.Unfinished(ctx, r.rdb)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, k := range active {
		if platform, id, ok := strings.Cut(k, ":"); ok {
			keep[lifecycle.TicketDirName(platform, id)] = true
		}
	}
	var dirs []ticketDir
	for _, root := range r.cfg.Roots {
		dirs = append(dirs, scanTicketDirs(root)...)
	}
	now := r.cfg.Clock()
	var removed []string
	var left []ticketDir
	var total int64
	for _, d := range dirs {
		if !keep[d.name] && now.Sub(d.touched) > r.cfg.MaxAge {
			removed = append(removed, r.remove(d, "older than max_age"))
			continue
		}
		left = append(left, d)
		total += d.size
	}
	sort.Slice(left, func(i, j int) bool { return left[i].touched.Before(left[j].touched) })
	for _, d := range left {
		if total <= r.cfg.MaxBytes {
			break
		}
		if keep[d.name] {
			continue
		}
		removed = append(removed, r.remove(d, "over max_bytes"))
		total -= d.size
	}
	return removed, nil
}

func (r *Retention) remove(d ticketDir, why string) string {
	if err := os.RemoveAll(d.path); err != nil {
		r.cfg.Logger.Warn("retention: remove", zap.String("dir", d.path), zap.Error(err))
	} else {
		r.cfg.Logger.Info("retention: removed a finished ticket's files", zap.String("dir", d.path),
			zap.String("why", why), zap.Int64("bytes", d.size), zap.Time("touched", d.touched))
	}
	return d.path
}

// scanTicketDirs lists root's {project}/{ticket} directories with their
// size and newest modification time. Unreadable parts are skipped.
func scanTicketDirs(root string) []ticketDir {
	projects, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []ticketDir
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		tickets, err := os.ReadDir(filepath.Join(root, p.Name()))
		if err != nil {
			continue
		}
		for _, t := range tickets {
			if !t.IsDir() {
				continue
			}
			d := ticketDir{path: filepath.Join(root, p.Name(), t.Name()), name: t.Name()}
			_ = filepath.WalkDir(d.path, func(_ string, e fs.DirEntry, err error) error {
				if err != nil {
					if errors.Is(err, fs.ErrPermission) {
						return fs.SkipDir
					}
					return nil
				}
				if info, err := e.Info(); err == nil {
					if info.ModTime().After(d.touched) {
						d.touched = info.ModTime()
					}
					if !e.IsDir() {
						d.size += info.Size()
					}
				}
				return nil
			})
			out = append(out, d)
		}
	}
	return out
}
