package platforms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// WebhookBody is a delivery's JSON object with its top-level members left
// undecoded. Decoders read through it what tells them whether the daemon
// acts on a delivery before they decode the rest, so a member the daemon
// never uses, with a type or shape it does not expect, cannot turn an
// event it ignores into a 4xx: a tracker counts 4xx answers towards
// disabling the hook (GitLab, gitlab-org/gitlab!166329).
type WebhookBody map[string]json.RawMessage

// errNotObject is the reason a body that is valid JSON but no object is
// refused.
var errNotObject = errors.New("not a JSON object")

// ParseWebhookBody parses body as a JSON object. Every tracker sends one;
// anything else (truncated JSON, an array, null) wraps ErrMalformed.
func ParseWebhookBody(body []byte) (WebhookBody, error) {
	var b WebhookBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if b == nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, errNotObject)
	}
	return b, nil
}

// String is member name when it is a JSON string, else "" (absent, null,
// or another type).
func (b WebhookBody) String(name string) string {
	var s string
	if raw, ok := b[name]; !ok || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// Object is member name when it is a JSON object, else nil.
func (b WebhookBody) Object(name string) WebhookBody {
	raw, ok := b[name]
	if !ok || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return nil
	}
	var o WebhookBody
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

// Has reports whether member name is present and not null.
func (b WebhookBody) Has(name string) bool {
	raw, ok := b[name]
	return ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
