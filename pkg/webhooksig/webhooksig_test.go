package webhooksig

import (
	"errors"
	"testing"
)

func TestVerifyHMAC(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":1}`)
	secrets := [][]byte{[]byte("old"), []byte("new")}
	if i, err := VerifyHMAC(Header(body, []byte("new")), body, secrets); err != nil || i != 1 {
		t.Errorf("rotated secret: %d %v, want index 1", i, err)
	}
	for _, c := range []struct {
		value string
		want  error
	}{
		{"", ErrMissing},
		{"sha1=abc", ErrMissing},
		{"sha256=zz", ErrMalformed},
		{"sha256=00", ErrMalformed},
		{Header(body, []byte("other")), ErrMismatch},
		{Header([]byte(`{"a":2}`), []byte("new")), ErrMismatch},
	} {
		if _, err := VerifyHMAC(c.value, body, secrets); !errors.Is(err, c.want) {
			t.Errorf("VerifyHMAC(%q) = %v, want %v", c.value, err, c.want)
		}
	}
}

func TestMatchToken(t *testing.T) {
	t.Parallel()
	secrets := [][]byte{nil, []byte("a"), []byte("b")}
	if got := MatchToken([]byte("b"), secrets); got != 2 {
		t.Errorf("MatchToken(b) = %d", got)
	}
	if got := MatchToken(nil, secrets); got != -1 {
		t.Errorf("an empty token matched an empty secret: %d", got)
	}
}
