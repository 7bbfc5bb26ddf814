package trackerhttp

import (
	"bytes"
	"container/list"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// maxCachedBody bounds one cached body; larger responses pass uncached.
const maxCachedBody = 4 << 20

// cache revalidates GETs with If-None-Match and turns a 304 back into the
// 200 the caller would have seen, so SDKs need no cache awareness. Entries
// are keyed by URL, Accept and a hash of the credentials (one token must not
// be served another token's view), and evicted least recently used.
type cache struct {
	next http.RoundTripper
	max  int

	mu    sync.Mutex
	seq   uint64
	lru   *list.List // of *cacheEntry, most recent first
	items map[string]*list.Element
}

type cacheEntry struct {
	key    string
	etag   string
	header http.Header
	body   []byte
	seq    uint64 // order of storing: the newer of two candidate entries wins
}

func newCache(next http.RoundTripper, max int) *cache {
	return &cache{next: next, max: max, lru: list.New(), items: make(map[string]*list.Element)}
}

func (c *cache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch {
		return c.patch(req)
	}
	// A caller doing its own conditional or partial GET gets exactly what it asked for.
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" ||
		req.Header.Get("If-Modified-Since") != "" || req.Header.Get("Range") != "" {
		return c.next.RoundTrip(req)
	}
	key := req.URL.String() + "|" + req.Header.Get("Accept") + "|" + credentialKey(req)
	cached := c.get(key)
	if written := c.get(writtenKey(req)); written != nil && (cached == nil || written.seq > cached.seq) {
		// The last PATCH of this URL is newer than any GET of it: offer
		// its ETag. An SDK may ask for another media type on GET than on
		// PATCH (go-github does); the server compares the tag with the
		// representation it would send, so a 304 means the bodies agree and
		// anything else is a plain 200.
		cached = written
	}
	send := req
	if cached != nil {
		send = req.Clone(req.Context())
		send.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := c.next.RoundTrip(send)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		_ = resp.Body.Close()
		return fromCache(req, resp, cached), nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		return c.store(key, resp)
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		c.remove(key)
	}
	return resp, nil
}

// writtenKey is where patch keeps a PATCH answer: per URL and credentials,
// for a GET of that URL with any Accept.
func writtenKey(req *http.Request) string {
	return req.URL.String() + "|PATCH|" + credentialKey(req)
}

// patch sends a PATCH and, when the answer is a 200 with an ETag, keeps its
// body as the validator for the next GET of the same URL: a PATCH of a resource
// answers with the resource as it now is (GitHub's issues do), so the next
// read of it (the executor re-reading a ticket the claim just wrote) is a
// conditional GET whose 304 costs no rate limit. If the tracker's GET
// representation or ETag differs, that GET simply gets its 200. Any other
// successful answer drops the entry, which can no longer be current.
func (c *cache) patch(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	key := writtenKey(req)
	switch {
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		return c.store(key, resp)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		c.remove(key)
	}
	return resp, nil
}

// store buffers resp's body, remembers it, and hands the caller an
// equivalent response.
func (c *cache) store(key string, resp *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCachedBody+1))
	if err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	if len(body) > maxCachedBody {
		// Too big to keep: give the caller the bytes read plus the rest.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		c.remove(key)
		return resp, nil
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.put(&cacheEntry{key: key, etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body})
	return resp, nil
}

// fromCache builds the 200 a caller sees for a 304: the cached headers and
// body, refreshed by the 304's own headers (rate counters, Date, ETag).
func fromCache(req *http.Request, notModified *http.Response, e *cacheEntry) *http.Response {
	h := e.header.Clone()
	for k, v := range notModified.Header {
		switch k {
		case "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding":
			continue
		}
		h[k] = v
	}
	h.Set(FromCacheHeader, "1")
	h.Set("Content-Length", strconv.Itoa(len(e.body)))
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         notModified.Proto,
		ProtoMajor:    notModified.ProtoMajor,
		ProtoMinor:    notModified.ProtoMinor,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)),
		Request:       req,
		TLS:           notModified.TLS,
	}
}

func (c *cache) get(key string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry)
}

func (c *cache) put(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	e.seq = c.seq
	if el, ok := c.items[e.key]; ok {
		el.Value = e
		c.lru.MoveToFront(el)
		return
	}
	c.items[e.key] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheEntry).key)
	}
}

func (c *cache) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.lru.Remove(el)
		delete(c.items, key)
	}
}
