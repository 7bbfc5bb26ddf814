// Package redact owns secret redaction: a Redactor, built from the secret
// values the daemon knows (pipeline.secrets, tracker tokens, the workspace
// push token, webhook secrets), replaces each of them and their common
// encodings with Replacement in everything the daemon posts, logs or shows
// that carries pipeline output or ticket text. Pipeline output is hostile:
// a prompt-injected agent will print its credentials, and a public ticket
// publishes whatever the daemon comments.
//
// Redaction is a safety net, not a boundary: a secret the pipeline
// transforms otherwise (hex, reversed, split across lines, one character a
// line) is not recognised. Secrets shorter than MinSecretLen bytes are
// ignored: redacting every "abc" would make output unreadable and hide
// nothing worth hiding.
package redact

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Replacement stands in for every redacted occurrence.
const Replacement = "[redacted]"

// MinSecretLen is the shortest secret, in bytes, a Redactor redacts.
const MinSecretLen = 4

// Redactor replaces known secrets and their encodings. The zero value and
// nil redact nothing. It is safe for concurrent use.
type Redactor struct {
	needles [][]byte // longest first, distinct, none empty
	longest int
}

// New is a Redactor for secrets; those shorter than MinSecretLen (after
// trimming surrounding whitespace, which a secret file often ends with) are
// ignored.
func New(secrets ...string) *Redactor {
	set := map[string]bool{}
	for _, s := range secrets {
		if len(strings.TrimSpace(s)) < MinSecretLen {
			continue
		}
		for _, v := range []string{s, strings.TrimSpace(s)} {
			for _, f := range forms(v) {
				if len(f) >= MinSecretLen {
					set[f] = true
				}
			}
		}
	}
	r := &Redactor{}
	for f := range set {
		r.needles = append(r.needles, []byte(f))
		r.longest = max(r.longest, len(f))
	}
	// Longest first, so the longest form wins at one position; sorted for
	// a deterministic order.
	slices.SortFunc(r.needles, func(a, b []byte) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return bytes.Compare(a, b)
	})
	return r
}

// forms is s as it may appear in output: itself, URL-encoded (query and
// path escaping, and RFC 3986's strict form with %20), and base64 in both
// alphabets. Base64 is matched by the part of the encoding that depends on
// s alone, for each of the three byte alignments s can have in the encoded
// input: that covers base64(s) with and without padding and s inside a
// larger encoded text, such as the Basic form base64("user:"+s) whatever
// the user.
func forms(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s), strictEscape(s)}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := 0; k < 3; k++ {
			e := enc.EncodeToString(append(make([]byte, k), s...))
			// Character j holds bits [6j, 6j+6); s's bits are [8k, 8(k+n)).
			from, to := (8*k+5)/6, 8*(k+len(s))/6
			if to > from {
				out = append(out, e[from:to])
			}
		}
	}
	return out
}

// strictEscape percent-encodes every byte but RFC 3986's unreserved ones
// (what encodeURIComponent and most other encoders produce, give or take
// a few marks).
func strictEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool { return r == nil || len(r.needles) == 0 }

// String is s with every secret form replaced.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	out, _ := r.redact(nil, []byte(s), len(s), true)
	return string(out)
}

// Bytes is b with every secret form replaced, in a new slice.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() {
		return append([]byte(nil), b...)
	}
	out, _ := r.redact(nil, b, len(b), true)
	return out
}

// Contains reports whether s holds a secret form.
func (r *Redactor) Contains(s string) bool {
	if r.Empty() {
		return false
	}
	for _, n := range r.needles {
		if strings.Contains(s, string(n)) {
			return true
		}
	}
	return false
}

// ContainsBytes reports whether b holds a secret form, as Contains does for
// a string, without copying b.
func (r *Redactor) ContainsBytes(b []byte) bool {
	if r.Empty() {
		return false
	}
	for _, n := range r.needles {
		if bytes.Contains(b, n) {
			return true
		}
	}
	return false
}

// MaxLen is the length in bytes of the longest secret form (0 for an empty
// Redactor). A stream searched a piece at a time finds every form when each
// piece starts with the last MaxLen()-1 bytes of the one before.
func (r *Redactor) MaxLen() int {
	if r == nil {
		return 0
	}
	return r.longest
}

// redact appends src to dst with secret forms replaced, deciding only about
// matches that start before cut; it stops at the first byte at or after cut
// not inside a match and returns how much of src it consumed. With final,
// cut is len(src) and everything is consumed. Matches are taken leftmost
// first, the longest at one position, so no secret form starts in the text
// left between two replacements.
func (r *Redactor) redact(dst, src []byte, cut int, final bool) ([]byte, int) {
	next := make([]int, len(r.needles))
	for i, n := range r.needles {
		next[i] = bytes.Index(src, n)
	}
	pos := 0
	for {
		best := -1
		for i, n := range r.needles {
			if next[i] >= 0 && next[i] < pos {
				if j := bytes.Index(src[pos:], n); j >= 0 {
					next[i] = pos + j
				} else {
					next[i] = -1
				}
			}
			// needles are longest first: a later one at the same
			// position never wins.
			if next[i] >= 0 && (best < 0 || next[i] < next[best]) {
				best = i
			}
		}
		if best < 0 || (!final && next[best] >= cut) {
			end := len(src)
			if !final {
				end = max(pos, cut)
			}
			return append(dst, src[pos:end]...), end
		}
		dst = append(dst, src[pos:next[best]]...)
		dst = append(dst, Replacement...)
		pos = next[best] + len(r.needles[best])
	}
}
