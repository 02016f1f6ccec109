package live

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
)

// Issue 29 item 8: live mode served (streamed tokens for, then cut) a
// request that a prediction of the same deployment rejects as too large
// for its KV pool. Both now follow one rule (engine.Config.Fits): for
// every backend and deployment shape, a request at the pool's edge is a
// 400 naming the rule exactly when predict's report counts it rejected,
// and is otherwise streamed to its end.
func TestLiveRejectsWhatPredictRejects(t *testing.T) {
	const agg = "engine:\n  backend: %s\n  workers:\n    aggregated:\n      kv_cache: {capacity: {type: fixed, blocks: %d}}\n%s"
	const dis = "engine:\n  mode: disaggregated\n  backend: %s\n  kv_transfer: {bandwidth_gb_per_second: 50, handoff: %s}\n" +
		"  workers:\n    prefill:\n      kv_cache: {capacity: {type: fixed, blocks: %d}}\n    decode:\n      kv_cache: {capacity: {type: fixed, blocks: %d}}\n"
	// Every pool below holds 512 tokens (vLLM blocks of 64, TensorRT-LLM
	// of 32, SGLang pages of 1), or 1,024 for a roomier prefill pool.
	configs := map[string]string{
		"vllm":               fmt.Sprintf(agg, "vllm", 8, ""),
		"vllm max_model_len": fmt.Sprintf(agg, "vllm", 8, "      scheduler: {max_model_len: 300}\n"),
		"trtllm":             fmt.Sprintf(agg, "trtllm", 16, ""),
		"sglang":             fmt.Sprintf(agg, "sglang", 512, ""),
		"vllm bootstrap":     fmt.Sprintf(dis, "vllm", "bootstrap", 16, 8),
		"vllm direct":        fmt.Sprintf(dis, "vllm", "direct", 16, 8),
		"sglang bootstrap":   fmt.Sprintf(dis, "sglang", "bootstrap", 1024, 512),
		"sglang direct":      fmt.Sprintf(dis, "sglang", "direct", 1024, 512),

		// Issue 30 item 7: without chunked prefill a prompt past the budget
		// is rejected as max_batched_tokens.
		"vllm chunked_prefill off": fmt.Sprintf(agg, "vllm", 8, "      scheduler: {chunked_prefill: false, max_batched_tokens: 300}\n"),
	}
	cases := [][2]int{{100, 412}, {100, 413}, {100, 414}, {299, 2}, {300, 1}, {500, 11}, {500, 12}, {500, 13},
		{510, 1}, {511, 1}, {511, 2}, {512, 1}, {513, 1}, {1, 511}, {1, 512}}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			_, hs := start(t, cfg, Options{Speedup: MaxSpeedup})
			rejected := 0
			for _, c := range cases {
				prompt, out := c[0], c[1]
				want := predictRejects(t, cfg, prompt, out)
				ids := strings.TrimSuffix(strings.Repeat("7,", prompt), ",")
				resp := post(t, context.Background(), hs.URL+"/v1/completions", fmt.Sprintf(`{"prompt":[%s],"max_tokens":%d,"stream":true}`, ids, out))
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case want && (resp.StatusCode != 400 || !strings.Contains(string(b), "predict rejects the request")):
					t.Errorf("prompt %d, max_tokens %d: predict rejects it, live answered %d %.300s", prompt, out, resp.StatusCode, b)
				case !want && (resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Contains(string(b), `"error"`)):
					t.Errorf("prompt %d, max_tokens %d: predict serves it, live answered %d %.300s", prompt, out, resp.StatusCode, b)
				}
				if want {
					rejected++
				}
			}
			if rejected == 0 || rejected == len(cases) {
				t.Errorf("%d of %d cases rejected: the cases miss the pool's edge", rejected, len(cases))
			}
		})
	}
}

// predictRejects runs one request of prompt and output tokens through a
// prediction of cfg and reports whether it was rejected.
func predictRejects(t *testing.T, cfg string, prompt, output int) bool {
	t.Helper()
	hashes := make([]string, (prompt+511)/512)
	for i := range hashes {
		hashes[i] = fmt.Sprint(i + 1)
	}
	trace := fmt.Sprintf(`{"timestamp":0,"input_length":%d,"output_length":%d,"hash_ids":[%s]}`+"\n", prompt, output, strings.Join(hashes, ","))
	p, err := sim.Prepare(sim.Inputs{Config: []byte(cfg), ConfigName: "live.yaml", Trace: []byte(trace), TraceName: "one.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Run(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Summary[schema.RejectedRequests] == 1:
		return true
	case r.Summary[schema.CompletedRequests] != 1:
		t.Fatalf("prompt %d, output %d: predict neither completed nor rejected it: %v completed, %v rejected", prompt, output, r.Summary[schema.CompletedRequests], r.Summary[schema.RejectedRequests])
	}
	return false
}
