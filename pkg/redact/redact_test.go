package redact_test

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/pkg/redact"
)

const secret = "ghp_S3cr3t/t0k+en=?&"

// encodings is every form of s the Redactor promises to catch.
func encodings(s string) map[string]string {
	return map[string]string{
		"plain":         s,
		"base64":        base64.StdEncoding.EncodeToString([]byte(s)),
		"base64-raw":    base64.RawStdEncoding.EncodeToString([]byte(s)),
		"base64url":     base64.URLEncoding.EncodeToString([]byte(s)),
		"base64url-raw": base64.RawURLEncoding.EncodeToString([]byte(s)),
		"basic":         base64.StdEncoding.EncodeToString([]byte("x-access-token:" + s)),
		"basic-oauth2":  base64.StdEncoding.EncodeToString([]byte("oauth2:" + s)),
		"basic-u":       base64.StdEncoding.EncodeToString([]byte("u:" + s)),
		"query":         url.QueryEscape(s),
		"path":          url.PathEscape(s),
	}
}

func TestEveryFormIsRedacted(t *testing.T) {
	t.Parallel()
	r := redact.New(secret)
	for name, f := range encodings(secret) {
		out := r.String("before " + f + " after")
		for fname, g := range encodings(secret) {
			if strings.Contains(out, g) {
				t.Errorf("%s: output %q still holds the %s form", name, out, fname)
			}
		}
		if !strings.Contains(out, redact.Replacement) || !strings.HasPrefix(out, "before ") {
			t.Errorf("%s: %q", name, out)
		}
	}
}

func TestShortSecretsAreIgnored(t *testing.T) {
	t.Parallel()
	r := redact.New("abc", "", "  x \n")
	if !r.Empty() {
		t.Fatal("a secret shorter than MinSecretLen is redacted")
	}
	if got := r.String("abc"); got != "abc" {
		t.Fatal(got)
	}
	var nilR *redact.Redactor
	if nilR.String("abcd") != "abcd" || nilR.Contains("abcd") {
		t.Fatal("nil Redactor changed text")
	}
}

func TestSecretFileNewlineIsTrimmed(t *testing.T) {
	t.Parallel()
	if got := redact.New("hunter22\n").String("pw=hunter22;"); got != "pw=[redacted];" {
		t.Fatal(got)
	}
}

func TestWriterCatchesASecretSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	r := redact.New(secret)
	in := "line one\ntoken=" + secret + "\nend\n"
	for split := 0; split <= len(in); split++ {
		var buf bytes.Buffer
		w := redact.NewWriter(r, &buf)
		w.Write([]byte(in[:split]))
		w.Write([]byte(in[split:]))
		w.Flush()
		if want := r.String(in); buf.String() != want {
			t.Fatalf("split at %d: %q, want %q", split, buf.String(), want)
		}
	}
}

// FuzzWriter: whatever the secrets, the input and its chunking, the stream
// is redacted exactly as the whole text at once, and no secret form starts
// in the text left between two replacements.
func FuzzWriter(f *testing.F) {
	f.Add("s3cr3t-value", "other-secret", "x s3cr3t-value y czNjcjN0LXZhbHVl z", uint64(7))
	f.Add("abcd", "bcde", "abcdeabcde", uint64(1))
	f.Add("aaaa", "aaaaa", "aaaaaaaaaaaaa", uint64(3))
	f.Fuzz(func(t *testing.T, s1, s2, in string, chunks uint64) {
		r := redact.New(s1, s2)
		whole := r.String(in)
		var buf bytes.Buffer
		w := redact.NewWriter(r, &buf)
		rest := in
		for rest != "" {
			n := int(chunks%7) + 1
			chunks = chunks/7 + uint64(len(rest))
			n = min(n, len(rest))
			w.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		w.Flush()
		if buf.String() != whole {
			t.Fatalf("streamed %q, whole %q", buf.String(), whole)
		}
		for _, seg := range strings.Split(whole, redact.Replacement) {
			for _, s := range []string{s1, s2} {
				if len(s) >= redact.MinSecretLen && strings.Contains(seg, s) && !strings.Contains(redact.Replacement, s) {
					t.Fatalf("secret %q left in %q (output %q)", s, seg, whole)
				}
			}
		}
	})
}

func TestContainsBytesAndMaxLen(t *testing.T) {
	r := redact.New("hunter22", "abc")
	if !r.ContainsBytes([]byte("x aHVudGVyMjI= y")) || !r.ContainsBytes([]byte("hunter22")) || r.ContainsBytes([]byte("abc hunter2")) {
		t.Error("ContainsBytes does not agree with Contains")
	}
	// The longest form is base64's, longer than the secret.
	if got := r.MaxLen(); got <= len("hunter22") {
		t.Errorf("MaxLen = %d, want more than %d", got, len("hunter22"))
	}
	var nilR *redact.Redactor
	if nilR.ContainsBytes([]byte("hunter22")) || nilR.MaxLen() != 0 {
		t.Error("a nil Redactor finds something")
	}
}
