package audit

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Defaults for zero WriterConfig fields.
const (
	// DefaultMaxLen caps the stream: ~100k events is weeks of history for
	// a busy fleet at ~300 bytes each (~30 MB of Redis memory).
	DefaultMaxLen = 100_000
	// DefaultBuffer is how many events may wait for the writer before
	// Observe starts dropping them.
	DefaultBuffer = 4096
	// DefaultBatch is the most XADDs sent in one pipeline.
	DefaultBatch = 256
	// DefaultReportInterval spaces the warnings about dropped events, so a
	// Redis outage logs one line per interval, not one per event.
	DefaultReportInterval = 30 * time.Second
	// DefaultFlushTimeout bounds the final flush on shutdown.
	DefaultFlushTimeout = 5 * time.Second
)

// WriterConfig configures a Writer.
type WriterConfig struct {
	// Key is the stream; default keys.Audit().
	Key string
	// MaxLen trims the stream approximately (XADD MAXLEN ~): Redis keeps
	// at least MaxLen entries and drops whole internal nodes beyond, so the
	// length can exceed MaxLen by up to one node (stream-node-max-entries,
	// 100 by default).
	MaxLen         int64
	Buffer         int
	Batch          int
	ReportInterval time.Duration
	FlushTimeout   time.Duration
	Logger         *zap.Logger
}

// Writer appends lifecycle events to the audit stream. Observe only puts the
// event in a bounded buffer, so claims and runs never wait for Redis; Run
// drains the buffer in pipelined batches. An event that finds the buffer
// full, or whose batch Redis refused, is dropped and counted: the audit
// trail is best effort by design, the tracker's labels stay the truth.
type Writer struct {
	cfg     WriterConfig
	rdb     redis.UniversalClient
	log     *zap.Logger
	ch      chan lifecycle.Event
	dropped atomic.Uint64
	written atomic.Uint64
}

var _ lifecycle.Observer = (*Writer)(nil)

// NewWriter wires a writer; nothing is written until Run.
func NewWriter(rdb redis.UniversalClient, cfg WriterConfig) *Writer {
	if cfg.Key == "" {
		cfg.Key = keys.Audit()
	}
	if cfg.MaxLen <= 0 {
		cfg.MaxLen = DefaultMaxLen
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.ReportInterval <= 0 {
		cfg.ReportInterval = DefaultReportInterval
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = DefaultFlushTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Writer{cfg: cfg, rdb: rdb, log: cfg.Logger.Named("audit"), ch: make(chan lifecycle.Event, cfg.Buffer)}
}

// Observe implements lifecycle.Observer without ever blocking.
func (w *Writer) Observe(ev lifecycle.Event) {
	select {
	case w.ch <- ev:
	default:
		w.dropped.Add(1)
	}
}

// Dropped counts events that never reached the stream.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Written counts events Redis accepted.
func (w *Writer) Written() uint64 { return w.written.Load() }

// Run writes buffered events until ctx is done, then flushes what is
// buffered (within FlushTimeout) and returns nil. Run it after every
// component that emits has stopped, so their last events are kept.
func (w *Writer) Run(ctx context.Context) error {
	tick := time.NewTicker(w.cfg.ReportInterval)
	defer tick.Stop()
	var reported uint64
	var lastErr error
	report := func() {
		if d := w.dropped.Load(); d != reported {
			fields := []zap.Field{zap.Uint64("dropped", d-reported), zap.Uint64("droppedTotal", d), zap.String("stream", w.cfg.Key)}
			if lastErr != nil {
				fields = append(fields, zap.Error(lastErr))
			}
			w.log.Warn("audit events dropped", fields...)
			reported, lastErr = d, nil
		}
	}
	batch := make([]lifecycle.Event, 0, w.cfg.Batch)
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.FlushTimeout)
			for {
				batch = w.fill(batch[:0])
				if len(batch) == 0 {
					break
				}
				if err := w.write(fctx, batch); err != nil {
					lastErr = err
					w.dropped.Add(uint64(len(w.ch))) // Redis is gone: the rest would fail too
					for len(w.ch) > 0 {
						<-w.ch
					}
					break
				}
			}
			cancel()
			report()
			return nil
		case <-tick.C:
			report()
		case ev := <-w.ch:
			// Not bound to ctx: a batch taken as shutdown begins is still
			// written, within FlushTimeout.
			batch = w.fill(append(batch[:0], ev))
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.FlushTimeout)
			if err := w.write(wctx, batch); err != nil {
				lastErr = err
			}
			cancel()
		}
	}
}

// fill appends buffered events to batch without waiting, up to Batch.
func (w *Writer) fill(batch []lifecycle.Event) []lifecycle.Event {
	for len(batch) < w.cfg.Batch {
		select {
		case ev := <-w.ch:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// write sends batch as one pipeline of XADDs. A failed pipeline counts the
// whole batch as dropped; entries Redis did take are not retried, so an
// event is never recorded twice.
func (w *Writer) write(ctx context.Context, batch []lifecycle.Event) error {
	cmds, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, ev := range batch {
			p.XAdd(ctx, &redis.XAddArgs{Stream: w.cfg.Key, MaxLen: w.cfg.MaxLen, Approx: true, Values: encode(ev)})
		}
		return nil
	})
	ok := 0
	for _, c := range cmds {
		if c.Err() == nil {
			ok++
		}
	}
	w.written.Add(uint64(ok))
	w.dropped.Add(uint64(len(batch) - ok))
	return err
}
