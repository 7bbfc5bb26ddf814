package receiver

import (
	"context"
	"errors"
	"io"
	"net/http"
)

// errNoRoom is a body the budget had no room for within BudgetWait.
var errNoRoom = errors.New("no room in the body budget")

// readBody reads r's body, at most MaxBody bytes, into a buffer whose every
// byte is reserved in the body budget before it is allocated: the buffer
// starts at one chunk (or the announced length) and doubles as bytes
// arrive, so a sender holds budget only for what it has sent. release
// returns the reservation; call it when the body is no longer needed,
// whatever the error. Errors are the body reader's (*http.MaxBytesError,
// a deadline), or errNoRoom.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	b := rc.cfg.BodyBudget
	var held int64
	release = func() { b.Release(held) }
	reserve := func(n int64) error {
		ctx, cancel := context.WithTimeout(r.Context(), rc.cfg.BudgetWait)
		defer cancel()
		if err := b.Acquire(ctx, n); err != nil {
			return errNoRoom
		}
		held += n
		return nil
	}
	limit := rc.cfg.MaxBody
	if r.ContentLength >= 0 {
		limit = min(limit, r.ContentLength)
	}
	size := min(limit, chunk)
	if err := reserve(size); err != nil {
		return nil, release, err
	}
	buf := make([]byte, 0, size)
	lr := http.MaxBytesReader(w, r.Body, rc.cfg.MaxBody)
	for {
		if len(buf) == cap(buf) {
			if int64(cap(buf)) >= limit {
				// Full: only the end of the body (or a MaxBytesError,
				// for a body longer than announced or allowed) may follow.
				var probe [1]byte
				n, err := lr.Read(probe[:])
				switch {
				case n > 0:
					return nil, release, &http.MaxBytesError{Limit: rc.cfg.MaxBody}
				case errors.Is(err, io.EOF):
					return buf, release, nil
				case err != nil:
					return nil, release, err
				}
				continue
			}
			grown := min(2*int64(cap(buf)), limit)
			if err := reserve(grown); err != nil {
				return nil, release, err
			}
			next := make([]byte, len(buf), grown)
			copy(next, buf)
			b.Release(int64(cap(buf)))
			held -= int64(cap(buf))
			buf = next
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, release, nil
		}
		if err != nil {
			return nil, release, err
		}
	}
}
