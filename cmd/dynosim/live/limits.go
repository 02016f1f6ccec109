package live

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// DefaultMaxInflightBytes bounds the request bytes being read, tokenized
// or waiting for an engine (Options.MaxInflightBytes).
const DefaultMaxInflightBytes = 64 << 20

// budget bounds the bytes of request bodies in flight: those being read
// and tokenized, and those of requests waiting for an engine. Their memory
// is a small multiple of their bytes (the body, its decoded prompt, the
// token ids, the loop's copy of them), so this bounds what clients can
// make the server hold at once: a hundred concurrent 7 MB bodies ran it
// out of memory (issue 29 item 3). Past it a request gets 429 at once.
type budget struct {
	max  int64
	used atomic.Int64
	peak atomic.Int64 // the most ever held (tests)
}

// take reserves n bytes, unless that would pass the bound.
func (b *budget) take(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	for {
		u, p := b.used.Load(), b.peak.Load()
		if u <= p || b.peak.CompareAndSwap(p, u) {
			return true
		}
	}
}

// lease is what one request holds of the budget; free gives it back once,
// from the handler or the driver, whichever is last to need it.
type lease struct {
	b *budget
	n atomic.Int64
}

func (l *lease) free() {
	if l == nil {
		return
	}
	if n := l.n.Swap(0); n > 0 {
		l.b.used.Add(-n)
	}
}

// errBusy is a body read past the budget.
var errBusy = errors.New("the request bodies in flight reach --max-inflight-bytes")

// bodyChunk is how much of a body of unknown length (chunked) is reserved
// at a time.
const bodyChunk = 256 << 10

// heldBody reads a request body, reserving its bytes as they come: a body
// of known length at once (before any of it is read), one sent in chunks
// as it grows.
type heldBody struct {
	io.ReadCloser
	l    *lease
	read int64
}

// hold starts r's lease: nil and errBusy if the budget cannot take a body
// of r's declared length now.
func (b *budget) hold(r *http.Request) (*lease, error) {
	l := &lease{b: b}
	if n := r.ContentLength; n > 0 {
		n = min(n, maxBody+1) // the rest is refused as too large while read
		if !b.take(n) {
			return nil, errBusy
		}
		l.n.Store(n)
	}
	r.Body = &heldBody{ReadCloser: r.Body, l: l}
	return l, nil
}

func (h *heldBody) Read(p []byte) (int, error) {
	if held := h.l.n.Load(); h.read+int64(len(p)) > held {
		more := max(int64(len(p)), bodyChunk)
		if !h.l.b.take(more) {
			if h.read >= held {
				return 0, errBusy
			}
			p = p[:held-h.read] // what was reserved, first
		} else {
			h.l.n.Add(more)
		}
	}
	n, err := h.ReadCloser.Read(p)
	h.read += int64(n)
	return n, err
}
