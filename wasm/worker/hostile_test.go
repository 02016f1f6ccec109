//go:build !(js && wasm)

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/core/sim"
)

// A run's work is capped by its tokens, not only its passes: 15,000
// requests × 3,000 output tokens at concurrency 15,000 are a few thousand
// passes but minutes of CPU. Refused before the replay.
func TestTokenCapsRefuseBeforeTheReplay(t *testing.T) {
	h := NewHandler(nil, Options{Limits: LimitsForBudget(DefaultCPUBudgetMs)})
	post := func(fields ...field) *httptest.ResponseRecorder {
		body, ct := multipartBody(t, fields...)
		return do(t, h, "POST", "/v1/predict", body, ct)
	}
	// The yardstick: a small run on this machine as loaded now. The refused
	// run would take minutes; the refusal must come in the time of a small
	// run, not within a fixed time a busy machine could miss.
	start := time.Now()
	if rec := post(field{"config", "", testConfig}, field{"trace", "t.jsonl", traceSlice(t, 40)}); rec.Code != 200 {
		t.Fatalf("a small run: %d %s", rec.Code, rec.Body)
	}
	small := time.Since(start)
	start = time.Now()
	wantError(t, post(field{"config", "big.yaml", `traffic:
  source: {type: synthetic, input_tokens: 100, output_tokens: 3000}
  load: {type: concurrency, concurrency: 15000}
  stop: {requests: 15000}
`}), 413, "output tokens per run")
	if d := time.Since(start); d > max(2*time.Second, 10*small) {
		t.Errorf("refusal took %v (a 40-request run %v): the cap must act before the replay", d, small)
	}
	// Each cap alone is not exceeded, but the two together are.
	wantError(t, post(field{"config", "", `traffic:
  source: {type: synthetic, input_tokens: 30000, output_tokens: 800}
  load: {type: concurrency, concurrency: 100}
  stop: {requests: 15000}
`}), 413, "or a mix in proportion")
	wantError(t, post(field{"config", "", `traffic:
  source: {type: synthetic, input_tokens: 100000, output_tokens: 1}
  load: {type: concurrency, concurrency: 100}
  stop: {requests: 10000}
`}), 413, "prompt tokens per run")

	// A run of part of a trace (stop.requests) is capped as its requests
	// are released.
	h = NewHandler(nil, Options{Limits: sim.Limits{MaxOutputTokens: 2000}})
	body, ct := multipartBody(t, field{"config", "", testConfig}, field{"trace", "t.jsonl", traceSlice(t, 60)}, field{"set", "", "traffic.stop.requests=20"})
	wantError(t, do(t, h, "POST", "/v1/predict", body, ct), 413, "at most 2000 output tokens")
}

// The config is capped before parsing: YAML costs far more per byte than a
// trace (an 8 MB list of acceptance rates parsed for 19 s).
func TestConfigBytesCapped(t *testing.T) {
	h := NewHandler(nil, Options{MaxConfigBytes: 1000})
	huge := "engine: {speculative: {acceptance_rates: [" + strings.Repeat("0.5, ", 400) + "0.5]}}\n"
	body, ct := multipartBody(t, field{"config", "rates.yaml", huge})
	wantError(t, do(t, h, "POST", "/v1/predict", body, ct), 413, "rates.yaml: over this service's limit of 1000 bytes of config")
	body, ct = multipartBody(t, field{"config", "", "{}"}, field{"set", "", "engine.speculative.acceptance_rates=[" + strings.Repeat("0.5,", 300) + "0.5]"})
	wantError(t, do(t, h, "POST", "/v1/predict", body, ct), 413, "the set fields: over this service's limit of 1000 bytes")
}

// rawPost sends a hand-made request to a real server and returns the answer,
// or fails after wait.
func rawPost(t *testing.T, h http.Handler, head string, body io.Reader, wait time.Duration) (*http.Response, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(wait))
	go func() {
		io.WriteString(c, head)
		io.Copy(c, body) // may block: the server need not read it
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", wait, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func recorded(resp *http.Response, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	for k, v := range resp.Header {
		rec.Header()[k] = v
	}
	rec.WriteHeader(resp.StatusCode)
	rec.Body.WriteString(body)
	return rec
}

// A Content-Length over the cap is answered at once, without reading (or
// waiting for) the declared body.
func TestDeclaredTooLargeAnswersAtOnce(t *testing.T) {
	h := NewHandler(nil, Options{MaxBodyBytes: 1 << 20})
	small := "--B\r\nContent-Disposition: form-data; name=\"config\"\r\n\r\n{}\r\n"
	head := "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 99999999999\r\n\r\n"
	resp, body := rawPost(t, h, head, strings.NewReader(small), 5*time.Second)
	wantError(t, recorded(resp, body), 413, "99999999999 bytes")
}

// stalled yields its bytes, then blocks until released.
type stalled struct {
	r       io.Reader
	release chan struct{}
}

func (s *stalled) Read(p []byte) (int, error) {
	if n, err := s.r.Read(p); err != io.EOF {
		return n, err
	}
	<-s.release
	return 0, io.EOF
}

// A body that stops arriving is answered with 408 at the read deadline, as
// JSON, both through a real connection and through a body without one.
func TestStalledBodyTimesOut(t *testing.T) {
	h := NewHandler(nil, Options{BodyTimeout: 300 * time.Millisecond})
	part := "--B\r\nContent-Disposition: form-data; name=\"config\"\r\n\r\n{}\r\n--B\r\nContent-Disposition: form-data; name=\"trace\"; filename=\"t.jsonl\"\r\n\r\n{\"timestamp\": 0"
	release := make(chan struct{})
	defer close(release)
	head := fmt.Sprintf("POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: %d\r\n\r\n", len(part)+1000)
	resp, body := rawPost(t, h, head, &stalled{strings.NewReader(part), release}, 5*time.Second)
	wantError(t, recorded(resp, body), 408, "read deadline")

	req := httptest.NewRequest("POST", "/v1/predict", &stalled{strings.NewReader(part), release})
	req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { h.ServeHTTP(rec, req); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled body was not answered")
	}
	wantError(t, rec, 408, "read deadline")
}

type panicStore struct{}

func (panicStore) Get(string) ([]byte, bool, error) { panic("boom") }
func (panicStore) Put(string, []byte) error         { return nil }

func TestPanicIsJSON500(t *testing.T) {
	h := NewHandler(panicStore{}, Options{})
	rec := do(t, h, "GET", "/v1/runs/0123456789abcdef0123456789abcdef", nil, "")
	wantError(t, rec, 500, "internal error")
}

// JSON answers are nosniff; POST answers are never immutable, stored runs are.
func TestHeaders(t *testing.T) {
	h := NewHandler(newMemStore(), Options{})
	body, ct := multipartBody(t, field{"config", "config.yaml", testConfig}, field{"trace", "t.jsonl", traceSlice(t, 10)})
	raw := body.Bytes()
	check := func(what string, rec *httptest.ResponseRecorder, immutable bool) {
		t.Helper()
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", what, got)
		}
		if got := strings.Contains(rec.Header().Get("Cache-Control"), "immutable"); got != immutable {
			t.Errorf("%s: Cache-Control %q", what, rec.Header().Get("Cache-Control"))
		}
	}
	rec := do(t, h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct)
	check("POST miss", rec, false)
	loc := rec.Header().Get("Location")
	check("POST hit", do(t, h, "POST", "/v1/predict", bytes.NewBuffer(raw), ct), false)
	check("GET run", do(t, h, "GET", loc, nil, ""), true)
	check("health", do(t, h, "GET", "/v1/health", nil, ""), false)
	check("error", do(t, h, "GET", "/nowhere", nil, ""), false)
}

// Issue 29 item 15: a body that stalls (or reaches the size cap) inside a
// part header is a 408 (413), not a malformed header: the multipart parser
// reports the cut header line as "missing colon", hiding the read error.
func TestStallInPartHeaderIs408(t *testing.T) {
	config := "--B\r\nContent-Disposition: form-data; name=\"config\"\r\n\r\n{}\r\n"
	for _, tc := range []struct{ name, part string }{
		{"inside the first header", "--B\r\nContent-Disp"},
		{"inside a later header", config + "--B\r\nContent-Dispo"},
		{"after a header line", config + "--B\r\nContent-Disposition: form-data; name=\"trace\"\r\n"},
		{"inside the boundary", "--"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(nil, Options{BodyTimeout: 300 * time.Millisecond})
			release := make(chan struct{})
			defer close(release)
			head := fmt.Sprintf("POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: %d\r\n\r\n", len(tc.part)+1000)
			resp, body := rawPost(t, h, head, &stalled{strings.NewReader(tc.part), release}, 5*time.Second)
			wantError(t, recorded(resp, body), 408, "read deadline")
		})
	}
	t.Run("size cap inside a header", func(t *testing.T) {
		h := NewHandler(nil, Options{MaxBodyBytes: 64})
		body := config + "--B\r\nContent-Disposition: form-data; name=\"trace\"; filename=\"" + strings.Repeat("x", 100) + "\"\r\n\r\n{}\r\n--B--\r\n"
		req := httptest.NewRequest("POST", "/v1/predict", io.NopCloser(strings.NewReader(body)))
		req.ContentLength = -1 // chunked: the cap is met while reading
		req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		wantError(t, rec, 413, "")
	})
}

// Issue 29 item 9: the Worker bounds a run's simulator state to what an
// isolate holds (DefaultMaxStateBytes): 4,096 replicas × 16 DP ranks, which
// the CLI and the page run, answer 413 pointing at them, before anything
// is built; /v1/health names the limit.
func TestStateLimitIs413(t *testing.T) {
	h := NewHandler(nil, Options{Limits: LimitsForBudget(DefaultCPUBudgetMs)})
	body, ct := multipartBody(t, field{"config", "big.yaml", "engine: {workers: {aggregated: {parallelism: {replicas: 4096, attention_data: 16}}}}\ntraffic: {stop: {requests: 10}}\n"})
	wantError(t, do(t, h, "POST", "/v1/predict", body, ct), 413, "this service runs at most 48.0 MiB (engine.workers.aggregated.parallelism.replicas")
	rec := do(t, h, "GET", "/v1/health", nil, "")
	if !strings.Contains(rec.Body.String(), fmt.Sprintf(`"max_state_bytes":%d`, DefaultMaxStateBytes)) {
		t.Fatalf("health: %s", rec.Body)
	}
}
