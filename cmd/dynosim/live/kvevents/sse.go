package kvevents

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// ServeHTTP serves GET /v1/kv_events as text/event-stream: first the retained
// batches with seq > since (the Last-Event-ID header, else the query
// parameter ?since=N; neither: the whole retained window), then live ones,
// each as "id: <seq>\nevent: kv_events\ndata: <json>\n\n", with a
// ": keepalive" comment every 15 s. It returns when the client goes away, when
// the client falls too far behind (it should reconnect with Last-Event-ID),
// or when the hub closes.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	from, err := startSeq(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	backlog, s := h.subscribe(from)
	if s == nil {
		http.Error(w, "kv event hub closed", http.StatusServiceUnavailable)
		return
	}
	defer h.unsubscribe(s)

	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // keep reverse proxies from buffering the stream
	w.WriteHeader(http.StatusOK)

	out := sseWriter{w: w, rc: http.NewResponseController(w)}
	out.deadline()
	for _, b := range backlog {
		if !out.write(b.sse) {
			return
		}
	}
	backlog = nil // batches the ring evicts meanwhile need not outlive it here
	if !out.flush() {
		return
	}
	h.stream(r, s, &out)
}

// stream writes s's live batches and the keepalives until the client goes
// away, falls behind or the hub closes.
func (h *Hub) stream(r *http.Request, s *subscriber, out *sseWriter) {
	tick := time.NewTicker(h.keepalive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.ctx.Done():
			return
		case <-tick.C:
			out.deadline()
			if !out.write([]byte(": keepalive\n\n")) || !out.flush() {
				return
			}
		case b, ok := <-s.ch:
			if !ok {
				return
			}
			out.deadline()
			if !out.write(b.sse) || !out.drain(s) || !out.flush() {
				return
			}
		}
	}
}

// sseWriter writes an event stream to one client.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// deadline bounds the writes that follow, so that a client that stops
// reading is dropped instead of pinning this goroutine forever. Its error
// needs no check: a writer without deadlines just goes without, and a
// broken connection fails the next write.
func (o *sseWriter) deadline() { _ = o.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) }

// flush sends what is buffered; a writer that cannot flush is not a failure.
func (o *sseWriter) flush() bool {
	err := o.rc.Flush()
	return err == nil || errors.Is(err, http.ErrNotSupported)
}

// write reports whether p was written.
func (o *sseWriter) write(p []byte) bool {
	_, err := o.w.Write(p)
	return err == nil
}

// drain writes whatever else s has queued, so that the caller flushes
// once. It is false when the stream should end: a failed write, or s
// closed (what was written is flushed first).
func (o *sseWriter) drain(s *subscriber) bool {
	for {
		select {
		case b, ok := <-s.ch:
			if !ok {
				o.flush()
				return false
			}
			if !o.write(b.sse) {
				return false
			}
		default:
			return true
		}
	}
}

// startSeq returns the first seq an SSE client wants. Last-Event-ID wins
// over ?since= because a reconnecting EventSource resends its original URL
// with the header holding the newer position.
func startSeq(r *http.Request) (uint64, error) {
	v, name := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("since"), "since"
	}
	if v == "" {
		return 0, nil
	}
	if v == "-1" {
		return 0, nil // "before the first batch", since seqs start at 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("kvevents: bad %s %q: want a batch sequence number", name, v)
	}
	if n == math.MaxUint64 {
		return n, nil
	}
	return n + 1, nil
}
