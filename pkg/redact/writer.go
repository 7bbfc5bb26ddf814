package redact

import "io"

// Writer redacts a stream on its way to another writer. A secret may arrive
// split across any number of Write calls, so Writer holds back the last
// len(longest form)-1 bytes until the next Write or Flush shows whether
// they start a secret; Flush writes what is held and must be called when
// the stream ends. It is not safe for concurrent use.
type Writer struct {
	r    *Redactor
	w    io.Writer
	held []byte
	out  []byte
}

// NewWriter is a Writer that redacts r's secrets in what goes to w.
func NewWriter(r *Redactor, w io.Writer) *Writer { return &Writer{r: r, w: w} }

// Write takes all of p; an error is w's.
func (w *Writer) Write(p []byte) (int, error) {
	if w.r.Empty() {
		return w.w.Write(p)
	}
	w.held = append(w.held, p...)
	// A form starting before cut lies wholly within held.
	cut := len(w.held) - (w.r.longest - 1)
	if cut <= 0 {
		return len(p), nil
	}
	var n int
	w.out, n = w.r.redact(w.out[:0], w.held, cut, false)
	w.held = append(w.held[:0], w.held[n:]...)
	if _, err := w.w.Write(w.out); err != nil {
		return len(p), err
	}
	return len(p), nil
}

// Flush redacts and writes what Write held back.
func (w *Writer) Flush() error {
	if len(w.held) == 0 {
		return nil
	}
	var err error
	w.out, _ = w.r.redact(w.out[:0], w.held, len(w.held), true)
	w.held = w.held[:0]
	_, err = w.w.Write(w.out)
	return err
}
