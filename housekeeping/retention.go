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
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
)

// Retention defaults (config consumer.output.retention).
const (
	DefaultRetentionMaxAge   = 7 * 24 * time.Hour
	DefaultRetentionMaxBytes = 10 << 30
	DefaultRetentionInterval = 10 * time.Minute
)

// RetentionConfig configures a Retention.
type RetentionConfig struct {
	// WorkDir and LogsDir are the work root and the logs dir, both laid
	// out {root}/{project}/{ticket} ("" LogsDir: lifecycle.DefaultLogsDir).
	// The daemon's git dirs are in lifecycle.GitRoot(WorkDir), laid out
	// the same. A ticket's last-use mark is in LogsDir (lifecycle.LastUsed).
	WorkDir  string
	LogsDir  string
	MaxAge   time.Duration
	MaxBytes int64
	Interval time.Duration
	Clock    func() time.Time
	Logger   *zap.Logger
}

// Retention removes finished tickets' files from this replica's disk: a
// ticket's work dir, its git dir and its logs dir are one, sized together
// and removed together, the logs dir (holding the last-use mark) last. A
// ticket unused for MaxAge goes, and while the rest exceeds MaxBytes the
// least recently used go first. A ticket is dated by the last-use mark the
// executor writes in the logs dir with the daemon's clock
// (lifecycle.MarkUsed), never by a file time: a pipeline can set every
// time in its work dir. A ticket found without a mark is marked when first
// found, so it is kept MaxAge from then. Unlike the other housekeeping
// services it runs on every consumer replica, not only the leader, because
// the files are local. A ticket is finished when Redis no longer counts
// its attempts (runstate.Unfinished): a ticket between attempts keeps its
// files for the next one.
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
		cfg.Clock = wallclock.Now
	}
	if cfg.LogsDir == "" {
		cfg.LogsDir = lifecycle.DefaultLogsDir(cfg.WorkDir)
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

// ticketDir is one ticket's {project}/{ticket} directories, in the work
// root, the git root and the logs dir.
type ticketDir struct {
	rel     string   // {project}/{ticket}
	name    string   // {ticket}
	paths   []string // the work dir's first, then the git dir's, the logs dir's last
	touched time.Time
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
	now := r.cfg.Clock()
	dirs := scanTicketDirs([]string{r.cfg.WorkDir, lifecycle.GitRoot(r.cfg.WorkDir), r.cfg.LogsDir})
	for i := range dirs {
		dirs[i].touched = r.lastUsed(dirs[i].rel, now)
	}
	var removed []string
	var left []ticketDir
	var total int64
	for _, d := range dirs {
		if !keep[d.name] && now.Sub(d.touched) > r.cfg.MaxAge {
			removed = append(removed, r.remove(d, "unused for max_age")...)
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
		removed = append(removed, r.remove(d, "over max_bytes")...)
		total -= d.size
	}
	return removed, nil
}

// lastUsed is the ticket's last-use mark; a ticket without one is marked
// now (and one whose mark cannot be read or written is taken as used now:
// kept, never removed on a guess).
func (r *Retention) lastUsed(rel string, now time.Time) time.Time {
	at, err := lifecycle.LastUsed(r.cfg.LogsDir, rel)
	if err == nil {
		return at
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = lifecycle.MarkTicketDirUsed(r.cfg.LogsDir, rel, now)
	}
	if err != nil {
		r.cfg.Logger.Warn("retention: last-use mark", zap.String("ticket", rel), zap.Error(err))
	}
	return now
}

// remove removes the ticket's directories, the logs dir's (holding the
// mark) last, and returns those it removed. os.RemoveAll never follows a
// link below the path it is given (it works from directory descriptors),
// and the path's parents are the daemon's.
func (r *Retention) remove(d ticketDir, why string) []string {
	var removed []string
	for _, p := range d.paths {
		if err := os.RemoveAll(p); err != nil {
			r.cfg.Logger.Warn("retention: remove", zap.String("dir", p), zap.Error(err))
			return removed
		}
		removed = append(removed, p)
	}
	r.cfg.Logger.Info("retention: removed a finished ticket's files", zap.Strings("dirs", removed),
		zap.String("why", why), zap.Int64("bytes", d.size), zap.Time("lastUsed", d.touched))
	return removed
}

// scanTicketDirs lists the {project}/{ticket} directories under roots,
// one entry per ticket, with their size. Unreadable parts are skipped.
func scanTicketDirs(roots []string) []ticketDir {
	var out []ticketDir
	var sz sizer
	at := map[string]int{}
	for _, root := range roots {
		projects, err := os.ReadDir(root)
		if err != nil {
			continue
		}
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
				rel := filepath.Join(p.Name(), t.Name())
				i, ok := at[rel]
				if !ok {
					i = len(out)
					at[rel] = i
					out = append(out, ticketDir{rel: rel, name: t.Name()})
				}
				path := filepath.Join(root, rel)
				out[i].paths = append(out[i].paths, path)
				out[i].size += sz.dirSize(path)
			}
		}
	}
	return out
}

// inode identifies a file on this host.
type inode struct{ dev, ino uint64 }

// sizer sums the disk usage of directory trees, counting a file with
// several names (hard links) once across all of them.
type sizer struct{ seen map[inode]bool }

// dirSize is the bytes the entries under dir take on disk, dir included.
// Links are not followed, and a file's blocks are counted, not its
// apparent size: a pipeline's sparse file must not push the total over
// max_bytes and get other tickets removed.
func (s *sizer) dirSize(dir string) int64 {
	var size int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return fs.SkipDir
			}
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		n, id, shared := diskUsage(info)
		if shared {
			if s.seen[id] {
				return nil
			}
			if s.seen == nil {
				s.seen = map[inode]bool{}
			}
			s.seen[id] = true
		}
		size += n
		return nil
	})
	return size
}
