package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/internal/patience"
)

// Issue 29 item 3: a hundred concurrent 7 MB /tokenize bodies ran the
// server out of memory. The bytes of bodies in flight are bounded: past
// --max-inflight-bytes a request gets 429 with Retry-After and an OpenAI
// error before its body is read, the rest are served, and every byte taken
// is given back.
func TestConcurrentHugeBodiesAre429(t *testing.T) {
	s, hs := start(t, twoWorkers, Options{})
	addr := strings.TrimPrefix(hs.URL, "http://")
	// A prompt of 7 MB text ("lorem ipsum …" for /tokenize).
	const size = 7_000_000
	body := []byte(`{"prompt":"` + strings.Repeat("lorem ipsum dolor sit amet ", size/27) + `"}`)
	type conn struct {
		c net.Conn
		r *bufio.Reader
	}
	// Every request sends its headers and the first MiB of its body, and
	// stalls: none can finish before all were taken or refused, so the
	// count is exact, not a race with the server's speed.
	const n = 100
	cs := make([]conn, n)
	for i := range cs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		if _, err := c.Write(body[:1<<20]); err != nil {
			t.Fatal(err)
		}
		cs[i] = conn{c, bufio.NewReader(c)}
	}
	want := int(DefaultMaxInflightBytes / int64(len(body))) // 9
	type answer struct {
		i    int
		resp *http.Response
		body []byte
		err  error
	}
	answers := make(chan answer, n)
	for i, c := range cs {
		go func() {
			resp, err := http.ReadResponse(c.r, nil)
			var b []byte
			if err == nil {
				b, err = io.ReadAll(resp.Body)
			}
			answers <- answer{i, resp, b, err}
		}()
	}
	// The refused ones answer at once; the taken ones wait for their body.
	answered := map[int]bool{}
	for range n - want {
		var a answer
		select {
		case a = <-answers:
		case <-patience.After(t):
			t.Fatalf("%d refused by the test's deadline; want %d", len(answered), n-want)
		}
		var e apiError
		if a.err != nil || a.resp.StatusCode != http.StatusTooManyRequests || a.resp.Header.Get("Retry-After") != "1" || json.Unmarshal(a.body, &e) != nil ||
			e.Error.Type != "RateLimitError" || !strings.Contains(e.Error.Message, "--max-inflight-bytes") {
			t.Fatalf("request %d: %v %q, want 429 with Retry-After naming --max-inflight-bytes", a.i, a.err, a.body)
		}
		answered[a.i] = true
	}
	if p := s.budget.peak.Load(); p > DefaultMaxInflightBytes || p < int64(want*len(body)) {
		t.Errorf("peak bytes in flight %d, want %d taken within %d", p, want*len(body), DefaultMaxInflightBytes)
	}
	// The taken ones finish their bodies and are answered in full.
	for i, c := range cs {
		if !answered[i] {
			if _, err := c.c.Write(body[1<<20:]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range want {
		var a answer
		select {
		case a = <-answers:
		case <-patience.After(t):
			t.Fatal("the taken requests were not answered by the test's deadline")
		}
		var r struct{ Count int }
		if a.err != nil || a.resp.StatusCode != 200 || json.Unmarshal(a.body, &r) != nil || r.Count < 5*(size/27) {
			t.Fatalf("taken request %d: %v %.200q", a.i, a.err, a.body)
		}
	}
	if u := s.budget.used.Load(); u != 0 {
		t.Errorf("%d bytes still held after every /tokenize answered", u)
	}
	// Completions give their bytes back too: served, refused, rejected by
	// the engine, aborted, and a body sent in chunks.
	ctx, cancel := context.WithCancel(context.Background())
	held := post(t, ctx, hs.URL+"/v1/completions", `{"prompt":"hold","max_tokens":400000,"stream":true}`)
	if _, err := bufio.NewReader(held.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	held.Body.Close()
	for _, b := range []string{`{"prompt":"x","max_tokens":3}`, `{"prompt":"x","model":"nope"}`, `{"prompt":`, `{"prompt":"x","max_tokens":0}`} {
		resp := post(t, context.Background(), hs.URL+"/v1/completions", b)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json", io.MultiReader(strings.NewReader(`{"prompt":"chunked",`), bytes.NewReader([]byte(`"max_tokens":2}`))))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a chunked body: %v %v", resp, err)
	}
	resp.Body.Close()
	patience.Until(t, "every request's bytes given back", func() (bool, string) {
		u := s.budget.used.Load()
		return u == 0, fmt.Sprintf("%d bytes held", u)
	})
}
