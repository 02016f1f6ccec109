package kvevents

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/internal/patience"
	"github.com/dynosim/dynosim-web/kv"
)

// sseEvent is one parsed SSE event or comment.
type sseEvent struct{ id, event, data, comment string }

// sseServer serves h and reports each return of its handler on the channel.
func sseServer(t *testing.T, h *Hub) (*httptest.Server, chan struct{}) {
	returned := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv, returned
}

// get opens an SSE stream and parses it on a goroutine until it ends.
func get(t *testing.T, ctx context.Context, url string, hdr map[string]string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan sseEvent, 1024)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch k, v, _ := strings.Cut(line, ": "); {
			case line == "":
				events <- ev
				ev = sseEvent{}
			case k == "":
				ev.comment = v
			case k == "id":
				ev.id = v
			case k == "event":
				ev.event = v
			case k == "data":
				ev.data = v
			}
		}
	}()
	return resp, events
}

// next returns the next event, failing t after a timeout or at the end.
func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-patience.After(t):
		t.Fatal("no event by the test's deadline")
	}
	return sseEvent{}
}

// checkBatch checks an event is batch seq of the kv_events stream.
func checkBatch(t *testing.T, ev sseEvent, seq uint64) {
	t.Helper()
	var js struct {
		Seq    uint64            `json:"seq"`
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal([]byte(ev.data), &js); err != nil {
		t.Fatalf("event %+v: %v", ev, err)
	}
	if ev.id != strconv.FormatUint(seq, 10) || ev.event != "kv_events" || js.Seq != seq || len(js.Events) == 0 {
		t.Fatalf("event %+v, want batch %d", ev, seq)
	}
}

// TestSSE checks the backlog selected by since= and Last-Event-ID, then
// live batches, and the request errors.
func TestSSE(t *testing.T) {
	cases := []struct {
		name    string
		method  string
		query   string
		lastID  string
		status  int
		backlog []uint64 // the ring holds 3..7
	}{
		{"whole window", "GET", "", "", 200, []uint64{3, 4, 5, 6, 7}},
		{"since", "GET", "?since=4", "", 200, []uint64{5, 6, 7}},
		{"since before the first", "GET", "?since=-1", "", 200, []uint64{3, 4, 5, 6, 7}},
		{"since the last", "GET", "?since=7", "", 200, nil},
		{"Last-Event-ID", "GET", "", "6", 200, []uint64{7}},
		{"Last-Event-ID over since", "GET", "?since=0", "5", 200, []uint64{6, 7}},
		{"bad since", "GET", "?since=x", "", 400, nil},
		{"bad Last-Event-ID", "GET", "", "-2", 400, nil},
		{"POST", "POST", "", "", 405, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHub(Options{Model: "m", BlockSize: 16, Retain: 5})
			defer h.Close()
			for i := range 8 {
				h.Publish(i, float64(i), []kv.Event{stored(0, kv.Device, nil, uint64(i))})
			}
			srv, _ := sseServer(t, h)
			if c.status != 200 {
				req, _ := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.query, nil)
				req.Header.Set("Last-Event-ID", c.lastID)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
				}
				return
			}
			hdr := map[string]string{}
			if c.lastID != "" {
				hdr["Last-Event-ID"] = c.lastID
			}
			resp, events := get(t, t.Context(), srv.URL+c.query, hdr)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
			}
			for _, seq := range c.backlog {
				checkBatch(t, next(t, events), seq)
			}
			// The stream is subscribed once the headers are out: batches
			// published now follow the backlog with nothing lost.
			for i := range 3 {
				h.Publish(0, 9, []kv.Event{removed(0, kv.Device, uint64(i))})
			}
			for seq := uint64(8); seq < 11; seq++ {
				checkBatch(t, next(t, events), seq)
			}
		})
	}
}

// TestSSEKeepalive checks the comment that keeps idle proxies from closing
// the stream.
func TestSSEKeepalive(t *testing.T) {
	h := NewHub(Options{})
	defer h.Close()
	h.keepalive = 10 * time.Millisecond
	srv, _ := sseServer(t, h)
	_, events := get(t, t.Context(), srv.URL, nil)
	for range 2 {
		if ev := next(t, events); ev != (sseEvent{comment: "keepalive"}) {
			t.Fatalf("event %+v, want a keepalive comment", ev)
		}
	}
}

// TestSSEEnds checks that the handler returns when the client goes away
// and when the hub closes.
func TestSSEEnds(t *testing.T) {
	cases := []struct {
		name string
		end  func(h *Hub, cancel context.CancelFunc)
	}{
		{"client disconnects", func(_ *Hub, cancel context.CancelFunc) { cancel() }},
		{"hub closes", func(h *Hub, _ context.CancelFunc) { h.Close() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHub(Options{})
			defer h.Close()
			srv, returned := sseServer(t, h)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			_, events := get(t, ctx, srv.URL, nil)
			h.Publish(0, 0, []kv.Event{removed(0, kv.Device, 1)})
			checkBatch(t, next(t, events), 0)
			c.end(h, cancel)
			select {
			case <-returned:
			case <-patience.After(t):
				t.Fatal("ServeHTTP did not return")
			}
			for range events {
			}
			if c.name == "hub closes" {
				resp, err := http.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("status after Close %d, want 503", resp.StatusCode)
				}
			}
			h.Publish(0, 0, []kv.Event{removed(0, kv.Device, 2)}) // no subscriber left to block or panic on
			waitNoHubGoroutines(t)
		})
	}
}

// TestSSESlowSubscriber checks that a subscriber that stops reading is
// dropped instead of blocking Publish.
func TestSSESlowSubscriber(t *testing.T) {
	big := make([]uint64, 64)
	for i := range big {
		big[i] = uint64(i) << 50
	}
	cases := []struct {
		name    string
		batches int
		http    bool
	}{
		{"subscriber never reads", subBuffer + 1, false},
		{"HTTP client never reads", 20000, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHub(Options{BlockSize: 16})
			defer h.Close()
			var sub *subscriber
			var returned chan struct{}
			var body io.Closer
			if c.http {
				var srv *httptest.Server
				srv, returned = sseServer(t, h)
				resp, err := http.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body = resp.Body
			} else {
				_, sub = h.subscribe(0)
			}
			start := time.Now()
			for i := range c.batches {
				h.Publish(0, float64(i), []kv.Event{stored(0, kv.Device, nil, big...)})
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("publishing took %v", d)
			}
			if got := h.Counts().DroppedSSE; got != 1 {
				t.Fatalf("DroppedSSE = %d, want 1", got)
			}
			if sub != nil {
				n := 0
				for range sub.ch {
					n++
				}
				if n != subBuffer {
					t.Errorf("dropped subscriber had %d batches queued, want %d", n, subBuffer)
				}
				return
			}
			body.Close()
			select {
			case <-returned:
			case <-patience.After(t):
				t.Fatal("ServeHTTP of the dropped client did not return")
			}
		})
	}
}
