package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/wallclock"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// Refusal backoff: a ticket whose write the tracker refused for good is not
// tried again for RefusalBackoffInitial, doubled after each refusal of the
// same unchanged ticket, at most RefusalBackoffMax. A change of the ticket
// (its labels, or a webhook that says it changed after the refusal) ends
// the backoff at once.
const (
	RefusalBackoffInitial = 5 * time.Minute
	RefusalBackoffMax     = 24 * time.Hour
)

// Refusal operations, the op of a refusal's event and metric: what the
// daemon was doing when the tracker refused.
const (
	RefusalOpClaim      = "claim"      // Pending → Enqueued
	RefusalOpTransition = "transition" // the executor's label writes
	RefusalOpRepair     = "repair"     // housekeeping's label writes
	RefusalOpRetry      = "retry"      // an operator's retry, Failed → Enqueued
	RefusalOpGiveUp     = "give-up"    // attempts used up, Pending → Failed
)

// BackingOff is the claim outcome of a ticket not tried because the
// tracker refused its write for good and the ticket has not changed since.
const BackingOff Outcome = "backing_off"

// Refused is the claim outcome of a write the tracker refused for good
// (platforms.ErrRejected): the ticket is told once and backs off.
const Refused Outcome = "refused"

// RefusalsConfig configures Refusals.
type RefusalsConfig struct {
	Instance string
	Labels   Labels
	Clock    func() time.Time
	Logger   *zap.Logger
	Observer Observer
}

// Refusals is the one owner of the rule for a tracker's refusal for good
// (platforms.ErrRejected: a 4xx other than 408, 409, 412, 429, which
// sending again gets again): the ticket is told once, with the cause and
// the fix, the refusal is reported (EventRefusal: log, audit stream,
// agentsmith_tracker_refusals_total), and the ticket is not written again
// until it changes or its backoff ends. Claims (webhook, Poller,
// TriggerSweeper), the executor's transitions and housekeeping's repairs
// all ask it, so no path repeats a refused write every cycle.
type Refusals struct {
	rdb redis.UniversalClient
	cfg RefusalsConfig
}

// NewRefusals wires the refusal rule over Redis.
func NewRefusals(rdb redis.UniversalClient, cfg RefusalsConfig) *Refusals {
	if cfg.Clock == nil {
		cfg.Clock = wallclock.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Labels.Prefix == "" {
		cfg.Labels.Prefix = DefaultLabelPrefix
	}
	return &Refusals{rdb: rdb, cfg: cfg}
}

// refusalRecord is a ticket's refusal, JSON under keys.TrackerRefusal.
type refusalRecord struct {
	Ref    platforms.Ref `json:"ref"`    // the ticket, for ListRefusals
	Print  string        `json:"print"`  // the ticket as refused (fingerprint)
	At     time.Time     `json:"at"`     // when it was last refused
	Tries  int           `json:"tries"`  // refusals in a row of the same print
	Until  time.Time     `json:"until"`  // no write before this
	Op     string        `json:"op"`     // what was refused
	Status int           `json:"status"` // the tracker's HTTP status
	Told   string        `json:"told"`   // the status the ticket was told of
}

// fingerprint names a ticket's state as every listing, webhook payload and
// read shows it: its labels (in any order and case) and whether it is open.
func fingerprint(t *platforms.Ticket) string {
	ls := make([]string, len(t.Labels))
	for i, l := range t.Labels {
		ls[i] = strings.ToLower(l)
	}
	slices.Sort(ls)
	sum := sha256.Sum256([]byte(fmt.Sprintf("%t\n%s", t.Open, strings.Join(ls, "\n"))))
	return hex.EncodeToString(sum[:12])
}

func refusalBackoff(tries int) time.Duration {
	d := RefusalBackoffInitial
	for i := 0; i < tries && d < RefusalBackoffMax; i++ {
		d *= 2
	}
	return min(d, RefusalBackoffMax)
}

func (r *Refusals) read(ctx context.Context, ref platforms.Ref) (refusalRecord, bool, error) {
	raw, err := r.rdb.Get(ctx, RefusalKey(ref)).Bytes()
	if errors.Is(err, redis.Nil) {
		return refusalRecord{}, false, nil
	}
	if err != nil {
		return refusalRecord{}, false, err
	}
	rec, ok := decodeRefusal(raw)
	return rec, ok, nil
}

// decodeRefusal reads a stored refusal record; an unreadable one is as if
// none (false).
func decodeRefusal(raw []byte) (refusalRecord, bool) {
	var rec refusalRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return refusalRecord{}, false
	}
	return rec, true
}

// RefusalKey is where a ticket's refusal record is kept, for a caller that
// reads it with other keys in one round trip (BackingOffOn).
func RefusalKey(ref platforms.Ref) string { return keys.TrackerRefusal(ref.Key()) }

// BackingOff reports whether t (a snapshot from a listing, a webhook
// payload or a read) must not be written yet: the tracker refused it for
// good and it has not changed since. changedAt, when set, is when the
// tracker says the ticket last changed (a webhook's timestamp); a change
// after the refusal ends the backoff as a new label set does. A Redis
// error is not a reason to wait: it is logged and the write goes ahead.
func (r *Refusals) BackingOff(ctx context.Context, t *platforms.Ticket, changedAt time.Time) (time.Time, bool) {
	rec, ok, err := r.read(ctx, t.Ref)
	if err != nil {
		r.cfg.Logger.Warn("read tracker refusal record", zap.String("ticket", t.Ref.String()), zap.Error(err))
		return time.Time{}, false
	}
	return r.backingOff(rec, ok, t, changedAt)
}

// BackingOffOn is BackingOff for the record the caller read itself (the
// value at RefusalKey): a claim reads it in its lock's round trip.
func (r *Refusals) BackingOffOn(raw string, t *platforms.Ticket, changedAt time.Time) (time.Time, bool) {
	rec, ok := decodeRefusal([]byte(raw))
	return r.backingOff(rec, ok, t, changedAt)
}

func (r *Refusals) backingOff(rec refusalRecord, ok bool, t *platforms.Ticket, changedAt time.Time) (time.Time, bool) {
	switch {
	case !ok, rec.Print != fingerprint(t), !changedAt.IsZero() && changedAt.After(rec.At), !r.cfg.Clock().Before(rec.Until):
		return time.Time{}, false
	}
	return rec.Until, true
}

// Refused handles err when it is the tracker's refusal for good of op on
// t, the snapshot the write was made from, and reports whether it was,
// with the end of the ticket's backoff: the refusal is recorded, reported,
// and the ticket told once per status (a comment naming the cause and the
// fix; the comment may be refused too, and then nothing more is tried).
// Any other error is left to the caller's retries (false).
func (r *Refusals) Refused(ctx context.Context, p *Project, t *platforms.Ticket, op string, owner Owner, source string, err error) (time.Time, bool) {
	if !errors.Is(err, platforms.ErrRejected) {
		return time.Time{}, false
	}
	ref, now := t.Ref, r.cfg.Clock().UTC()
	status := platforms.RejectedStatus(err)
	// One cause per status: the claim's, the executor's and a repair's
	// label writes refused alike are one problem to fix.
	cause := strconv.Itoa(status)
	fp := fingerprint(t)
	var prev refusalRecord
	rec, werr := r.update(ctx, ref, func(cur refusalRecord, _ bool) (refusalRecord, bool) {
		prev = cur
		rec := refusalRecord{Ref: ref, Print: fp, At: now, Op: op, Status: status, Told: cause}
		if cur.Print == fp {
			rec.Tries = cur.Tries + 1
		}
		rec.Until = now.Add(refusalBackoff(rec.Tries))
		return rec, true
	})
	if werr != nil {
		r.cfg.Logger.Warn("record tracker refusal", zap.String("ticket", ref.String()), zap.Error(werr))
		if rec.Until.IsZero() {
			rec.Until = now.Add(RefusalBackoffInitial)
		}
	}
	// The told mark is swapped atomically (SET … GET): of replicas meeting
	// the same refusal at once, only the one that set it comments.
	toldKey := keys.TrackerRefusal(ref.Key()) + ":told"
	was, serr := r.rdb.SetArgs(context.WithoutCancel(ctx), toldKey, cause, redis.SetArgs{Get: true, TTL: keys.TrackerRefusalTTL}).Result()
	if serr != nil && !errors.Is(serr, redis.Nil) {
		r.cfg.Logger.Warn("mark tracker refusal told", zap.String("ticket", ref.String()), zap.Error(serr))
	}
	tell := serr == nil && was != cause || errors.Is(serr, redis.Nil)
	Emit(r.cfg.Logger, r.cfg.Observer, Event{Kind: EventRefusal, At: now, Ref: ref, Outcome: string(Refused), Owner: owner,
		Instance: r.cfg.Instance, Source: source, Op: op, Status: status, Reason: OneLine(err.Error(), 300)})
	if !tell {
		return rec.Until, true
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CommentTimeout)
	defer cancel()
	body := SafeComment(p.Redact, refusalComment(r.cfg.Labels.Prefix, p, op, status, err, rec.Until.Sub(now)))
	if cerr := p.Tracker.Comment(cctx, ref, body); cerr != nil {
		r.cfg.Logger.Warn("refusal comment failed", zap.String("ticket", ref.String()), zap.Error(cerr))
		if !errors.Is(cerr, platforms.ErrRejected) {
			// Told on the next refusal instead; a refused comment is not
			// tried again.
			_, uerr := r.update(ctx, ref, func(cur refusalRecord, found bool) (refusalRecord, bool) {
				if !found || cur.Told != cause {
					return cur, false
				}
				cur.Told = prev.Told
				return cur, true
			})
			if uerr != nil {
				r.cfg.Logger.Warn("record tracker refusal untold", zap.String("ticket", ref.String()), zap.Error(uerr))
			}
			r.rdb.Del(context.WithoutCancel(ctx), toldKey)
		}
	}
	return rec.Until, true
}

// maxRecordTries bounds update's optimistic transaction: each round that
// fails lost to another replica's write, which succeeded, so as many
// rounds as replicas meeting the same refusal at once suffice.
const maxRecordTries = 32

// update reads ref's refusal record, passes it to change (with whether
// there was one) and, when change says so, stores what it returns, in one
// optimistic transaction (WATCH on the record, MULTI/EXEC): a record
// another replica stores meanwhile makes it read and change again, so
// concurrent refusals each count a try. It returns what it stored.
func (r *Refusals) update(ctx context.Context, ref platforms.Ref, change func(refusalRecord, bool) (refusalRecord, bool)) (refusalRecord, error) {
	ctx = context.WithoutCancel(ctx)
	key := keys.TrackerRefusal(ref.Key())
	var rec refusalRecord
	txf := func(tx *redis.Tx) error {
		raw, err := tx.Get(ctx, key).Bytes()
		found := err == nil
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		var cur refusalRecord
		if found && json.Unmarshal(raw, &cur) != nil {
			cur, found = refusalRecord{}, false // unreadable: as if none
		}
		var write bool
		if rec, write = change(cur, found); !write {
			return nil
		}
		raw, _ = json.Marshal(rec)
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, key, raw, keys.TrackerRefusalTTL)
			pipe.ZAdd(ctx, keys.TrackerRefusals(), redis.Z{Score: float64(rec.Until.Unix()), Member: ref.Key()})
			// An entry whose backoff ended a record's TTL ago names a record
			// that has expired (a backoff ends at most a day after its record
			// is stored): trimmed here, so the index stays bounded by the
			// refusals of the last TTL even when nobody lists it.
			pipe.ZRemRangeByScore(ctx, keys.TrackerRefusals(), "-inf", "("+strconv.FormatInt(rec.At.Add(-keys.TrackerRefusalTTL).Unix(), 10))
			return nil
		})
		return err
	}
	for range maxRecordTries {
		err := r.rdb.Watch(ctx, txf, key)
		if !errors.Is(err, redis.TxFailedErr) {
			if err != nil {
				return rec, fmt.Errorf("record tracker refusal of %s: %w", ref, err)
			}
			return rec, nil
		}
	}
	return rec, fmt.Errorf("record tracker refusal of %s: %d rounds lost to concurrent writes", ref, maxRecordTries)
}

// RefusalEntry is one ticket's refusal for good as the status page and
// agentsmithctl status list it.
type RefusalEntry struct {
	Ticket string        `json:"ticket"`
	Ref    platforms.Ref `json:"ref"`
	Op     string        `json:"op"`     // RefusalOp*
	Status int           `json:"status"` // the tracker's HTTP status
	Since  time.Time     `json:"since"`  // the last refusal
	Until  time.Time     `json:"until"`  // next try, unless the ticket changes first
	Tries  int           `json:"tries"`  // refusals in a row of the unchanged ticket
	Told   bool          `json:"told"`   // the ticket has the comment naming cause and fix
}

// MaxListedRefusals bounds ListRefusals: a misconfigured token refuses
// every ticket, and a page of them says as much as all.
const MaxListedRefusals = 200

// List is ListRefusals on the Refusals' Redis.
func (r *Refusals) List(ctx context.Context, limit int) ([]RefusalEntry, int64, error) {
	return ListRefusals(ctx, r.rdb, limit)
}

// ListRefusals returns up to limit (at most MaxListedRefusals) tickets with
// a refusal record, the soonest next try first, and how many there are in
// all. It reads the index keys.TrackerRefusals that Refusals keeps beside
// each record (one ZRANGE, one MGET, one EXISTS per told mark in a
// pipeline), not a SCAN: that walks the whole keyspace, however few
// refusals there are. Index entries whose record has expired are dropped
// unless a record was stored again since the read (pruneRefusals).
func ListRefusals(ctx context.Context, rdb redis.UniversalClient, limit int) ([]RefusalEntry, int64, error) {
	if limit <= 0 || limit > MaxListedRefusals {
		limit = MaxListedRefusals
	}
	members, err := rdb.ZRange(ctx, keys.TrackerRefusals(), 0, int64(limit-1)).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("list tracker refusals: %w", err)
	}
	total, err := rdb.ZCard(ctx, keys.TrackerRefusals()).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("count tracker refusals: %w", err)
	}
	out := []RefusalEntry{}
	if len(members) == 0 {
		return out, total, nil
	}
	recKeys := make([]string, len(members))
	told := make([]*redis.IntCmd, len(members))
	pipe := rdb.Pipeline()
	for i, m := range members {
		recKeys[i] = keys.TrackerRefusal(m)
		told[i] = pipe.Exists(ctx, recKeys[i]+":told")
	}
	raws := pipe.MGet(ctx, recKeys...)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("read tracker refusals: %w", err)
	}
	var goneKeys []string
	gone := map[string]string{} // record key → what the MGET read ("" when missing)
	goneMember := map[string]string{}
	for i, v := range raws.Val() {
		s, ok := v.(string)
		var rec refusalRecord
		if !ok || json.Unmarshal([]byte(s), &rec) != nil || rec.Ref.ID == "" {
			goneKeys = append(goneKeys, recKeys[i])
			gone[recKeys[i]], goneMember[recKeys[i]] = s, members[i]
			continue
		}
		out = append(out, RefusalEntry{Ticket: rec.Ref.String(), Ref: rec.Ref, Op: rec.Op, Status: rec.Status, Since: rec.At,
			Until: rec.Until, Tries: rec.Tries, Told: told[i].Val() == 1})
	}
	if len(goneKeys) > 0 {
		// Expired (TrackerRefusalTTL) or unreadable: nothing backs off.
		total -= pruneRefusals(ctx, rdb, goneKeys, gone, goneMember)
	}
	return out, total, nil
}

// pruneRefusals drops the index entries of the records at recKeys that
// are still as the listing read them (gone: "" when missing, else the
// unreadable value), and returns how many it dropped. The records are
// watched (WATCH, read again, MULTI/EXEC), so a refusal another replica
// records after the listing's read keeps its entry; a prune that lost
// that race drops nothing and is left to the next listing.
func pruneRefusals(ctx context.Context, rdb redis.UniversalClient, recKeys []string, gone, member map[string]string) int64 {
	var n int64
	_ = rdb.Watch(ctx, func(tx *redis.Tx) error {
		vals, err := tx.MGet(ctx, recKeys...).Result()
		if err != nil {
			return err
		}
		var drop []any
		for i, v := range vals {
			s, _ := v.(string)
			if s == gone[recKeys[i]] {
				drop = append(drop, member[recKeys[i]])
			}
		}
		if len(drop) == 0 {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.ZRem(ctx, keys.TrackerRefusals(), drop...)
			return nil
		})
		if err == nil {
			n = int64(len(drop))
		}
		return err
	}, recKeys...)
	return n
}

// Forget drops ref's refusal record once a write of it succeeded, so a
// later refusal is told again.
func (r *Refusals) Forget(ctx context.Context, ref platforms.Ref) {
	_, err := r.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		ForgetRefusalOn(ctx, pipe, ref)
		return nil
	})
	if err != nil {
		r.cfg.Logger.Warn("forget tracker refusal", zap.String("ticket", ref.String()), zap.Error(err))
	}
}

// EndBackoff ends ref's backoff and keeps its told mark: a person asked
// for the write (an operator's retry), which is a change of the ticket, so
// it is tried at once; a refusal of it with the status the ticket was
// already told of is reported but not commented again.
func (r *Refusals) EndBackoff(ctx context.Context, ref platforms.Ref) {
	_, err := r.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Del(ctx, keys.TrackerRefusal(ref.Key()))
		pipe.ZRem(ctx, keys.TrackerRefusals(), ref.Key())
		return nil
	})
	if err != nil {
		r.cfg.Logger.Warn("end tracker refusal backoff", zap.String("ticket", ref.String()), zap.Error(err))
	}
}

// ForgetRefusalOn is Refusals.Forget queued on pipe, for a caller that sends its own
// writes in one round trip.
func ForgetRefusalOn(ctx context.Context, pipe redis.Pipeliner, ref platforms.Ref) {
	pipe.Del(ctx, keys.TrackerRefusal(ref.Key()), keys.TrackerRefusal(ref.Key())+":told")
	pipe.ZRem(ctx, keys.TrackerRefusals(), ref.Key())
}

// refusalComment tells the ticket what the tracker refused, why as far as
// its status (or the tracker's own error code, platforms.FixOf) says, and
// what fixes it.
func refusalComment(prefix string, p *Project, op string, status int, err error, wait time.Duration) string {
	what := "change this ticket's labels"
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: cannot go on: the tracker refused to %s (HTTP %d), and will refuse it again however often it is asked:\n\n",
		prefix, what, status)
	// The tracker's message in a code span: it may echo text from the
	// ticket, which must not render as markup or mention anyone.
	msg := strings.ReplaceAll(OneLine(err.Error(), 300), "`", "'")
	fmt.Fprintf(&b, "`%s`\n\n", platforms.NoMentions(msg))
	fix := platforms.FixOf(err)
	if fix == "" {
		fix = refusalFix(status)
	}
	fmt.Fprintf(&b, "Fix: %s\n\n", platforms.NoMentions(fix))
	fmt.Fprintf(&b, "The daemon does not try again until this ticket changes (its labels, or `%s` removed and added again) "+
		"or, failing that, in %s, then less and less often, at most once a day. It says this once.\n", p.TriggerLabel, wait.Round(time.Minute))
	return b.String()
}

// refusalFix is what an operator does about a refusal with this status.
func refusalFix(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "the daemon's token is not accepted (expired or revoked): give it a new one."
	case http.StatusForbidden:
		return "give the daemon's account the right to edit this ticket's labels: GitHub issues write (triage role or an App's issues permission); " +
			"GitLab Reporter or higher; Azure DevOps \"Edit work items in this node\" on the area path and \"Create tag definition\" for new tags; " +
			"Jira Edit Issues in the project."
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "the tracker's rules refuse the change: on Jira, put the Labels field on the project's edit screen " +
			"(\"Field 'labels' cannot be set. It is not on the appropriate screen\"); on Azure DevOps, a work item rule refuses the update " +
			"(TF401320: a required field or a state rule): change the rule or set the field; elsewhere, the tracker's message above names the field."
	case http.StatusNotFound, http.StatusGone:
		return "the daemon's account cannot see this ticket, or it was moved or deleted: grant it access to the project."
	}
	return "see the tracker's message above."
}

// OneLine is s on one line, at most n runes: a tracker's message as a
// result's reason quotes it.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(StripControl(s)), " ")
	return TruncateRunes(s, n)
}
