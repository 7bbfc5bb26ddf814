package procrun

import "unicode/utf8"

// tail keeps the last size bytes written to it in a fixed ring, so a chatty
// pipeline costs constant memory however much it prints.
type tail struct {
	buf   []byte
	pos   int   // next write position once the ring is full
	total int64 // bytes ever written
}

func newTail(size int) *tail { return &tail{buf: make([]byte, 0, size)} }

func (t *tail) Write(p []byte) {
	t.total += int64(len(p))
	size := cap(t.buf)
	if size == 0 {
		return
	}
	if len(t.buf) < size { // still filling
		n := min(size-len(t.buf), len(p))
		t.buf = append(t.buf, p[:n]...)
		p = p[n:]
		if len(p) == 0 {
			return
		}
	}
	if len(p) >= size {
		copy(t.buf, p[len(p)-size:])
		t.pos = 0
		return
	}
	n := copy(t.buf[t.pos:], p)
	copy(t.buf, p[n:])
	t.pos = (t.pos + len(p)) % size
}

// Bytes returns a copy of the kept output in order. When output was dropped,
// a rune cut in half at the start is dropped too so the tail is safe to
// post as a comment.
func (t *tail) Bytes() []byte {
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.pos:]...)
	out = append(out, t.buf[:t.pos]...)
	if t.total > int64(len(out)) {
		for i := 0; i < utf8.UTFMax-1 && len(out) > 0 && !utf8.RuneStart(out[0]); i++ {
			out = out[1:]
		}
	}
	return out
}
