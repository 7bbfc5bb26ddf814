package statuspage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Cookie names. Both are HttpOnly, SameSite=Strict, Path=/ (the admin
// listener serves nothing else a cookie could leak to), and Secure when the
// request came over TLS.
const (
	sessionCookie = "agentsmith_status_session"
	flashCookie   = "agentsmith_status_flash"
)

// DefaultSessionTTL is how long a login lasts.
const DefaultSessionTTL = 12 * time.Hour

// maxFormBytes bounds every form the page accepts (login, actions): they
// hold a token, a ticket id and a project name.
const maxFormBytes = 4 << 10

// maxFlash bounds the message carried to the next page view.
const maxFlash = 300

// sessions issues and checks the browser's session cookie and its CSRF
// token. The cookie is "<expiry unix>.<random>.<mac>", the MAC an HMAC of
// the rest under a key derived from the status token: it proves the holder
// logged in with the token, without being the token, so every replica that
// shares the token accepts it and changing the token logs everyone out.
// With no token the key is random per process and no login succeeds.
type sessions struct {
	key   []byte
	token string
	ttl   time.Duration
	clock func() time.Time
}

func newSessions(token string, ttl time.Duration, clock func() time.Time) *sessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	s := &sessions{token: token, ttl: ttl, clock: clock}
	if token != "" {
		s.key = mac([]byte(token), "agentsmithd status page session key v1")
	} else {
		s.key = make([]byte, 32)
		_, _ = rand.Read(s.key) // never fails (crypto/rand)
	}
	return s
}

func mac(key []byte, parts ...string) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// checkToken compares a presented token with the status token in constant
// time. With no status token nothing matches, the empty string included.
func (s *sessions) checkToken(got string) bool {
	return s.token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

// issue sets a fresh session cookie and returns its value.
func (s *sessions) issue(w http.ResponseWriter, r *http.Request) string {
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	exp := s.clock().Add(s.ttl)
	body := strconv.FormatInt(exp.Unix(), 10) + "." + b64(nonce)
	v := body + "." + b64(mac(s.key, "session", body))
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", Expires: exp, MaxAge: int(s.ttl.Seconds()),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return v
}

// session returns the request's valid session cookie, "" when it has none.
func (s *sessions) session(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) > 200 {
		return ""
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return ""
	}
	body, sig := c.Value[:i], c.Value[i+1:]
	want := b64(mac(s.key, "session", body))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return ""
	}
	expStr, _, _ := strings.Cut(body, ".")
	exp, err := strconv.ParseInt(expStr, 10, 64)
	if err != nil || !s.clock().Before(time.Unix(exp, 0)) {
		return ""
	}
	return c.Value
}

func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// csrf is the session's CSRF token: an HMAC of the session, so it needs no
// storage and a token of one session is worthless in another.
func (s *sessions) csrf(session string) string { return b64(mac(s.key, "csrf", session)) }

// checkCSRF compares the form's token with the session's in constant time.
func (s *sessions) checkCSRF(session, got string) bool {
	return session != "" && hmac.Equal([]byte(got), []byte(s.csrf(session)))
}

// setFlash carries msg (signed, bounded) to the next page view.
func (s *sessions) setFlash(w http.ResponseWriter, r *http.Request, msg string) {
	if len(msg) > maxFlash {
		msg = msg[:maxFlash] + "…"
	}
	v := b64([]byte(msg))
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: v + "." + b64(mac(s.key, "flash", v)), Path: "/", MaxAge: 60,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// takeFlash returns the flash message, if a valid one is set, and clears it.
func (s *sessions) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	clearCookie(w, r, flashCookie)
	v, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(b64(mac(s.key, "flash", v)))) {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// bearer reports whether the request carries the status token as
// "Authorization: Bearer <token>".
func (s *sessions) bearer(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && s.checkToken(got)
}
