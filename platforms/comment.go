package platforms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrRejected means the tracker refused a request for good: a 4xx answer
// other than 408 (timeout), 409 (conflict), 412 (precondition) or 429 (rate
// limit). Sending the same request again gets the same answer, so callers
// must not retry it; they change the request (a shorter comment) or give up.
var ErrRejected = errors.New("rejected by the tracker")

// Rejected wraps err with ErrRejected when status is a permanent 4xx; other
// statuses leave err as it is. Each platform's error classification calls
// it with the answer's status code.
func Rejected(status int, err error) error {
	if err == nil || status < 400 || status > 499 {
		return err
	}
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusPreconditionFailed, http.StatusTooManyRequests:
		return err
	}
	if errors.Is(err, ErrRejected) {
		return err
	}
	return &RejectedError{Status: status, Err: err}
}

// RejectedError is an ErrRejected with the status the tracker answered,
// which the daemon reports (metrics, the ticket's comment) so an operator
// sees which refusal it was.
type RejectedError struct {
	Status int
	Err    error
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%v (%d): %v", ErrRejected, e.Status, e.Err)
}

// Is makes errors.Is(err, ErrRejected) hold.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

func (e *RejectedError) Unwrap() error { return e.Err }

// RejectedStatus is the HTTP status of a refusal for good (ErrRejected),
// 0 when err is none or its status is unknown.
func RejectedStatus(err error) int {
	var re *RejectedError
	if errors.As(err, &re) {
		return re.Status
	}
	return 0
}

// FixedError is a refusal with the fix its tracker names for it: the
// tracker's own error code says more than the status (Azure DevOps answers
// a tag the identity may not create and a rule another field breaks with
// 403 and 400 like any other refusal), and the ticket's refusal comment
// gives this fix instead of the status's general one.
type FixedError struct {
	Err error
	Fix string
}

func (e *FixedError) Error() string { return e.Err.Error() }

func (e *FixedError) Unwrap() error { return e.Err }

// WithFix attaches fix to err; nil stays nil, and an empty fix leaves err
// as it is.
func WithFix(err error, fix string) error {
	if err == nil || fix == "" {
		return err
	}
	return &FixedError{Err: err, Fix: fix}
}

// FixOf is the fix attached to err with WithFix, "" when none.
func FixOf(err error) string {
	var f *FixedError
	if errors.As(err, &f) {
		return f.Fix
	}
	return ""
}

// DefaultCommentLimit is the comment size, in characters, assumed for a
// tracker that does not say (CommentLimiter): the smallest of the four
// platforms' limits (Jira and, by assumption, Azure DevOps).
const DefaultCommentLimit = 32767

// CommentLimiter is implemented by trackers that know the largest comment
// body, in characters (Unicode code points), the platform accepts. A longer
// body is refused (GitHub 422, GitLab 400, Jira 400), so the daemon cuts its
// comments to fit before it posts them.
type CommentLimiter interface {
	CommentLimit() int
}

// CommentLimit is t's comment limit, or DefaultCommentLimit.
func CommentLimit(t Tracker) int {
	if l, ok := t.(CommentLimiter); ok && l.CommentLimit() > 0 {
		return l.CommentLimit()
	}
	return DefaultCommentLimit
}

// CommentEditor is the optional capability behind progress comments
// (projects[].progress: comment): one comment per run, posted once and then
// edited in place, so a long run shows where it is without filling the
// ticket with comments and notifying its watchers each time. Comment ids are
// the platform's, as strings. Every platform lets the author edit their
// comment (GitHub PATCH issues/comments/{id}, GitLab PUT notes/{id}, Azure
// DevOps PATCH comments/{id}, Jira PUT comment/{id}).
type CommentEditor interface {
	// AddComment posts body on the ticket and returns the comment's id.
	AddComment(ctx context.Context, ref Ref, body string) (string, error)
	// EditComment replaces the body of the comment id on the ticket;
	// ErrNotFound when it is gone (deleted by a person).
	EditComment(ctx context.Context, ref Ref, id, body string) error
}

// zeroWidthSpace is invisible in every tracker's rendering and breaks the
// patterns below: no parser this file names skips it (Go's and Ruby's
// whitespace classes do not include it).
const zeroWidthSpace = "\u200b"

// NoCommandLines puts a zero-width space before every "/" that opens a
// line, that only Blank runes separate from the start of s or from a
// LineBreak, so no line of a comment the daemon posts is a command to the
// tracker, to a bot reading it or to the daemon itself:
//
//   - GitLab runs quick actions (/close, /title, /label, /move, /clone, …)
//     in notes created or edited through the API, as the note's author, the
//     daemon's account (https://docs.gitlab.com/user/project/quick_actions/;
//     gitlab4j/gitlab4j-api#1273). Its extractor takes "/" at the very start
//     of a line (lib/gitlab/quick_actions/extractor.rb: ^\/(?<cmd>…)); its
//     code-block and inline-code skip rules are regexes, not CommonMark, and
//     have changed between versions, so a code fence is no guard: every line
//     is made inert, inside fences too.
//   - GitHub, Jira and Azure DevOps run nothing from a comment themselves,
//     but bots and workflows on them do: Prow (/close, /reopen, /retitle,
//     /lgtm, /approve, /retest: ^/cmd line regexes), issue_comment
//     workflows such as slash-command-dispatch (they run with the
//     commenter's permission, the daemon's token being a PAT or an App),
//     and Jira automation rules matching comment text. The daemon posts the
//     same text everywhere, so the rule is the same everywhere.
//
// Blank is wider than ASCII space on purpose (issue 41): "\u00a0/agent-smith
// approve" was left as it was, and a reader that trims Unicode space (the
// daemon's own parser did, Azure DevOps' &nbsp; still is a space to it)
// read a command. A LineBreak other than "\n" ("\r", U+2028, U+0085, …)
// opens a line too, as it does for JavaScript's and Python's line regexes.
// U+200B is not Blank, so the result is left as it is by a second pass.
//
// The rendered text is unchanged to a reader.
func NoCommandLines(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '/' && lineLed(s, i) {
			b.WriteString(s[last:i])
			b.WriteString(zeroWidthSpace)
			last = i
		}
	}
	if last == 0 && b.Len() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// NoMentions puts a zero-width space after every "@" in s, text from a
// pipeline, so it notifies no one and addresses no bot: GitHub and GitLab
// @user and @org/team mentions, bot commands (@dependabot merge,
// @mergifyio queue, @coderabbitai), Azure DevOps @<id> mentions. The
// daemon's own mentions (pipeline.escalate.mention) are not passed
// through it.
func NoMentions(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "@"+zeroWidthSpace, "@"), "@", "@"+zeroWidthSpace)
}
