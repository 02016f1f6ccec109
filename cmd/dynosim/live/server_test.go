package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/patience"
)

// A small deployment: two vLLM workers on the roofline (Llama-3.1-8B,
// H100), round robin.
const twoWorkers = `engine:
  workers:
    aggregated:
      parallelism: {replicas: 2}
router: {policy: round_robin}
`

func start(t *testing.T, cfg string, o Options) (*Server, *httptest.Server) {
	t.Helper()
	o.Inputs.Config, o.Inputs.ConfigName = []byte(cfg), "live.yaml"
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, hs
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// events reads an SSE body's data lines, up to [DONE].
func events(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return out
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		out = append(out, m)
	}
	t.Fatalf("stream ended without [DONE] (%v)", sc.Err())
	return nil
}

func TestCompletions(t *testing.T) {
	_, hs := start(t, twoWorkers, Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		name, path, body string
		tokens           int
	}{
		{"text", "/v1/completions", `{"prompt":"The quick brown fox","max_tokens":7}`, 7},
		{"token ids", "/v1/completions", `{"prompt":[101,102,103,104,105],"max_tokens":3}`, 3},
		{"chat", "/v1/chat/completions", `{"model":"llama-3.1-8b","messages":[{"role":"user","content":"Hello"}],"max_tokens":4}`, 4},
		{"chat parts", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}],"max_completion_tokens":2}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, ctx, hs.URL+tc.path, tc.body)
			defer resp.Body.Close()
			var r struct {
				Object  string
				Choices []struct {
					Text         string
					Message      struct{ Role, Content string }
					FinishReason string `json:"finish_reason"`
				}
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d: %v", resp.StatusCode, err)
			}
			text := r.Choices[0].Text + r.Choices[0].Message.Content
			if len(strings.Fields(text)) != tc.tokens || r.Usage.CompletionTokens != tc.tokens || r.Choices[0].FinishReason != "length" || r.Usage.PromptTokens == 0 {
				t.Fatalf("%+v", r)
			}
		})
	}
	// The same prompt again, long enough to fill blocks, hits the prefix
	// cache of the worker it lands on (round robin over two: every other).
	long := strings.Repeat("lorem ipsum dolor sit amet ", 100)
	var cached []int
	for range 3 {
		resp := post(t, ctx, hs.URL+"/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":1,"stream":true,"stream_options":{"include_usage":true}}`, long))
		ev := events(t, resp.Body)
		resp.Body.Close()
		u := ev[len(ev)-1]["usage"].(map[string]any)
		cached = append(cached, int(u["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64)))
	}
	if cached[0] != 0 || cached[2] == 0 || cached[2]%64 != 0 {
		t.Errorf("cached tokens %v: want 0, then a block-aligned hit on the same worker", cached)
	}
}

// A disaggregated deployment serves too: the prefill pool computes the
// prompt, the decode pool streams every token.
func TestDisaggregated(t *testing.T) {
	s, hs := start(t, "engine: {mode: disaggregated, kv_transfer: {bandwidth_gb_per_second: 50}}\n", Options{})
	if !strings.Contains(s.Info, "disaggregated") {
		t.Errorf("info %q", s.Info)
	}
	resp := post(t, context.Background(), hs.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`)
	defer resp.Body.Close()
	if ev := events(t, resp.Body); len(ev) != 7 {
		t.Fatalf("%d chunks", len(ev))
	}
}

func TestStreamChunks(t *testing.T) {
	_, hs := start(t, twoWorkers, Options{})
	resp := post(t, context.Background(), hs.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	ev := events(t, resp.Body)
	// role, five tokens, the finish chunk; no usage without include_usage
	if len(ev) != 7 {
		t.Fatalf("%d chunks: %v", len(ev), ev)
	}
	for i, e := range ev {
		c := e["choices"].([]any)[0].(map[string]any)
		d := c["delta"].(map[string]any)
		switch {
		case e["object"] != "chat.completion.chunk":
			t.Fatalf("chunk %d: %v", i, e)
		case i == 0 && d["role"] != "assistant":
			t.Fatalf("first chunk %v", e)
		case i > 0 && i < 6 && (d["content"] == nil || c["finish_reason"] != nil):
			t.Fatalf("token chunk %v", e)
		case i == 6 && c["finish_reason"] != "length":
			t.Fatalf("last chunk %v", e)
		}
	}
}

func TestBadRequests(t *testing.T) {
	// A pool of 8 blocks of 64 tokens: a 600-token prompt never fits.
	_, hs := start(t, twoWorkers, Options{Inputs: sim.Inputs{Sets: []string{
		"engine.workers.aggregated.kv_cache.capacity.type=fixed", "engine.workers.aggregated.kv_cache.capacity.blocks=8"}}})
	huge := strings.Repeat("7,", 599) + "7"
	for _, tc := range []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/v1/completions", `{"prompt":`, 400, "request body"},
		{"/v1/completions", `{"prompt":"x","model":"gpt-9"}`, 404, "gpt-9"},
		{"/v1/completions", `{"prompt":""}`, 400, "prompt: is empty"},
		{"/v1/completions", `{"prompt":[1,-2]}`, 400, "prompt[1]"},
		{"/v1/completions", `{"prompt":{"a":1}}`, 400, "prompt: must be"},
		{"/v1/completions", `{"prompt":"x","max_tokens":0}`, 400, "max_tokens"},
		{"/v1/completions", `{"prompt":"x","n":2}`, 400, "n: only 1"},
		{"/v1/chat/completions", `{"messages":[]}`, 400, "messages"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "only text"},
		{"/v1/completions", `{"prompt":[` + huge + `]}`, 400, "never fit"},
		{"/v1/completions", `{"prompt":[` + huge + `],"stream":true}`, 400, "never fit"},
		{"/v1/nope", `{}`, 404, "no such route"},
	} {
		resp := post(t, context.Background(), hs.URL+tc.path, tc.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !bytes.Contains(b, []byte(tc.msg)) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.path, tc.body, resp.StatusCode, b, tc.code, tc.msg)
		}
	}
	if _, err := New(Options{Inputs: sim.Inputs{Config: []byte("engine: {bogus: 1}"), ConfigName: "d.yaml"}}); err == nil || !strings.Contains(err.Error(), "d.yaml:1: engine.bogus") {
		t.Errorf("an unknown key: %v", err)
	}
	if _, err := New(Options{Speedup: -1, Inputs: sim.Inputs{Config: []byte(twoWorkers)}}); err == nil {
		t.Error("a negative speedup was taken")
	}
}

// Issue 29 item 1: a max_tokens the engine could never hold (2^62 panicked
// sizing the request's block list, 1e10 ran out of memory, 2^63−1 wrapped
// and never ended) is a 400 naming the field, and the server goes on.
func TestHugeMaxTokensIs400(t *testing.T) {
	_, hs := start(t, twoWorkers, Options{})
	for _, n := range []string{"4611686018427387904", "10000000000", "9223372036854775807", "16777217"} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := `{"prompt":"x","max_tokens":` + n + `}`
			if path == "/v1/chat/completions" {
				body = `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":` + n + `}`
			}
			resp := post(t, context.Background(), hs.URL+path, body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !bytes.Contains(b, []byte("max_tokens: must be ≤ 16777216")) {
				t.Errorf("%s max_tokens %s: %d %s, want 400 naming the bound", path, n, resp.StatusCode, b)
			}
		}
	}
	resp := post(t, context.Background(), hs.URL+"/v1/completions", `{"prompt":"x","max_tokens":2}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after the huge requests, a normal one: %d", resp.StatusCode)
	}
}

// Past --max-waiting requests waiting for an engine, new ones get 429
// with Retry-After; the waiting ones still complete.
func TestTooManyRequests(t *testing.T) {
	// One worker that takes one sequence at a time: the rest wait.
	_, hs := start(t, twoWorkers, Options{MaxWaiting: 2, Inputs: sim.Inputs{Sets: []string{
		"engine.workers.aggregated.parallelism.replicas=1", "engine.workers.aggregated.scheduler.max_sequences=1"}}})
	// The running request is a stream this test ends itself once the other
	// five were queued or turned away: a short one could finish before the
	// last of them arrived on a busy machine, which would then be served.
	hold, release := context.WithCancel(context.Background())
	defer release()
	held := post(t, hold, hs.URL+"/v1/completions", `{"prompt":"hello","max_tokens":400000,"stream":true}`)
	defer held.Body.Close()
	if _, err := bufio.NewReader(held.Body).ReadString('\n'); err != nil { // a token: it runs
		t.Fatal(err)
	}
	type result struct {
		code  int
		retry string
	}
	results := make(chan result, 5)
	for range 5 {
		go func() {
			resp := post(t, context.Background(), hs.URL+"/v1/completions", `{"prompt":"hello","max_tokens":200}`)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
	}
	ok, limited := 1, 0 // the held stream was served
	tally := func(n int) {
		for range n {
			select {
			case r := <-results:
				switch {
				case r.code == 200:
					ok++
				case r.code == 429 && r.retry == "1":
					limited++
				default:
					t.Errorf("%+v", r)
				}
			case <-patience.After(t):
				t.Fatalf("%d served, %d turned away by the test's deadline", ok, limited)
			}
		}
	}
	tally(3) // the turned-away ones answer at once; the waiting ones wait for the held stream
	release()
	tally(2)
	// One running, two waiting: three served, three turned away.
	if ok != 3 || limited != 3 {
		t.Errorf("%d served, %d turned away; want 3 and 3", ok, limited)
	}
}

// A client that goes away mid-stream aborts its request: the engine frees
// its KV, and the abort is counted as a finish reason.
func TestDisconnectAborts(t *testing.T) {
	_, hs := start(t, twoWorkers, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, hs.URL+"/v1/completions", `{"prompt":"tell me a long story","max_tokens":100000,"stream":true}`)
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // a token arrived
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	patience.Until(t, "an abort after the disconnect", func() (bool, string) {
		m := scrape(t, hs.URL)
		done := strings.Contains(m, `finished_reason="abort",model_name="llama-3.1-8b",worker="0"} 1`) &&
			metricSum(m, "vllm:num_requests_running") == 0 && metricSum(m, "vllm:kv_cache_usage_perc") == 0
		return done, grep(m, "vllm:num_requests_running", "kv_cache_usage", "request_success")
	})
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricSum adds the samples of one metric family's series.
func metricSum(text, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		var v float64
		fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
		sum += v
	}
	return sum
}

func grep(text string, words ...string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// Each backend serves with its own engine core and metric family.
func TestBackends(t *testing.T) {
	for _, tc := range []struct{ backend, want, absent string }{
		{"vllm", "vllm:time_to_first_token_seconds_bucket", "sglang:"},
		{"trtllm", "vllm:num_requests_running", "sglang:"},
		{"sglang", "sglang:time_to_first_token_seconds_bucket", "vllm:"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			_, hs := start(t, twoWorkers, Options{Inputs: sim.Inputs{Sets: []string{"engine.backend=" + tc.backend}}})
			resp := post(t, context.Background(), hs.URL+"/v1/completions", `{"prompt":"hello there","max_tokens":3,"stream":true}`)
			if ev := events(t, resp.Body); len(ev) != 4 {
				t.Fatalf("%d chunks", len(ev))
			}
			resp.Body.Close()
			m := scrape(t, hs.URL)
			if !strings.Contains(m, tc.want) || strings.Contains(m, "\n"+tc.absent) {
				t.Fatalf("/metrics of %s:\n%s", tc.backend, grep(m, "vllm:", "sglang:"))
			}
		})
	}
}
