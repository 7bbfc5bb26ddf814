// Package webhooksig holds the two webhook authentication schemes the
// trackers share, so each is written (and reviewed for timing leaks) once:
// the "sha256=<hex HMAC-SHA256 of the body>" signature (GitHub's
// X-Hub-Signature-256, Jira's X-Hub-Signature) and a shared-secret token
// compared in constant time (GitLab's X-Gitlab-Token, Azure DevOps' basic
// auth password).
package webhooksig

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"
)

// Errors Verify returns; callers wrap them with their header's name.
var (
	ErrMissing   = errors.New("missing or not sha256")
	ErrMalformed = errors.New("not a sha256 hex digest")
	ErrMismatch  = errors.New("matches no configured secret")
)

const prefix = "sha256="

// Sign is HMAC-SHA256 of body with secret.
func Sign(body, secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

// Header is the "sha256=<hex>" header value for body, for senders (the
// emulator, tests).
func Header(body, secret []byte) string { return prefix + hex.EncodeToString(Sign(body, secret)) }

// VerifyHMAC checks a "sha256=<hex>" header value against every secret and
// returns the index of the first that matches. Every secret is tried even
// after a match, so timing says nothing about which one it was.
func VerifyHMAC(value string, body []byte, secrets [][]byte) (int, error) {
	sig, ok := strings.CutPrefix(value, prefix)
	if !ok {
		return -1, ErrMissing
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return -1, ErrMalformed
	}
	match := -1
	for i, secret := range secrets {
		if hmac.Equal(got, Sign(body, secret)) && match < 0 {
			match = i
		}
	}
	if match < 0 {
		return -1, ErrMismatch
	}
	return match, nil
}

// MatchToken compares got with every non-empty secret in constant time and
// returns the index of the first match, or -1. Every secret is compared.
func MatchToken(got []byte, secrets [][]byte) int {
	match := -1
	for i, s := range secrets {
		if len(s) > 0 && subtle.ConstantTimeCompare(got, s) == 1 && match < 0 {
			match = i
		}
	}
	return match
}
