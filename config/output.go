package config

import (
	"path/filepath"
	"time"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
)

// Output defaults: the executor's and the Retention service's own.
const (
	DefaultLogMaxBytes       = consumer.DefaultLogMaxBytes // per attempt
	DefaultRetentionMaxAge   = housekeeping.DefaultRetentionMaxAge
	DefaultRetentionMaxBytes = housekeeping.DefaultRetentionMaxBytes
	DefaultRetentionInterval = housekeeping.DefaultRetentionInterval
	minRetentionInterval     = time.Second
	minLogMaxBytes           = 1024
)

// Output says where each attempt's full output is kept and how long
// finished tickets' working directories and logs stay on this replica.
type Output struct {
	// LogsDir holds the logs as {logs_dir}/{project}/{ticket}/attempt-N.log
	// (run-R-attempt-N.log for run R > 1, after an operator's retry)
	// (default {work_dir}-logs, next to the work dir). It must be outside
	// the work dir and writable by the daemon's user alone: a pipeline that
	// could write there could plant a link in place of the next log.
	// Relative to the config file's directory.
	LogsDir string `yaml:"logs_dir"`
	// LogMaxBytes caps one attempt's log file; output past it is dropped
	// and the file says so. Pipelines' output is not trusted to be small.
	LogMaxBytes int64 `yaml:"log_max_bytes"`
	// Retention removes finished tickets' work dirs and logs.
	Retention Retention `yaml:"retention"`
}

// Retention bounds the disk that finished tickets' work dirs and logs use:
// a ticket not running here is removed once untouched for MaxAge, and the
// least recently touched go first while the total exceeds MaxBytes.
type Retention struct {
	MaxAge   time.Duration `yaml:"max_age"`
	MaxBytes int64         `yaml:"max_bytes"`
	Interval time.Duration `yaml:"interval"`
}

func (o *Output) applyDefaults(baseDir, workDir string) {
	switch {
	case o.LogsDir == "":
		o.LogsDir = lifecycle.DefaultLogsDir(workDir)
	case baseDir != "" && !filepath.IsAbs(o.LogsDir):
		o.LogsDir = filepath.Join(baseDir, o.LogsDir)
	}
	setDefault(&o.LogMaxBytes, DefaultLogMaxBytes)
	setDefault(&o.Retention.MaxAge, DefaultRetentionMaxAge)
	setDefault(&o.Retention.MaxBytes, DefaultRetentionMaxBytes)
	setDefault(&o.Retention.Interval, DefaultRetentionInterval)
}

func (o *Output) validate(errs *Errors, workDir string) {
	if within(o.LogsDir, workDir) || within(workDir, o.LogsDir) {
		errs.add("consumer.output.logs_dir", "must be outside consumer.work_dir (and not contain it): pipelines write in the work dir")
	}
	if o.LogMaxBytes < minLogMaxBytes {
		errs.add("consumer.output.log_max_bytes", "must be at least 1024")
	}
	positive(errs, "consumer.output.retention.max_age", o.Retention.MaxAge)
	if o.Retention.MaxBytes < 1 {
		errs.add("consumer.output.retention.max_bytes", "must be positive")
	}
	if o.Retention.Interval < minRetentionInterval {
		errs.add("consumer.output.retention.interval", "must be at least 1s")
	}
}

// within reports whether path is dir or beneath it, lexically.
func within(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && filepath.IsLocal(rel)
}
