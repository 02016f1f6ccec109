package sim

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestItem33_6SGLangTTFT runs two requests through one SGLang worker with
// fixed timing (prefill 50 ms, decode 5 ms a pass): request 1 (100 tokens
// out) at 0, request 2 at 20 ms, during request 1's prefill. Under
// engine.semantics real SGLang's event loop prefills each prompt in a pass
// of its own, which samples the first token: request 1's TTFT is the 50 ms
// prefill, request 2's prefill pass runs 50–100 ms with request 1 waiting.
// With enable_mixed_chunk that pass is one forward with request 1's decode
// (fixed timing has no mixed price: 55 ms). Under mocker (mocker.md §3.4)
// every prefill pass also runs the decode step: the first token comes at
// prefill + decode (0–55, then 55–110 ms).
func TestItem33_6SGLangTTFT(t *testing.T) {
	const base = `
traffic:
  source: {type: trace, format: mooncake, block_size: 16}
  load: {type: trace_timestamps}
engine:
  backend: sglang
  semantics: %s
  workers:
    aggregated:
      scheduler: {enable_mixed_chunk: %s}
      timing: {type: fixed, prefill_ms: 50, decode_ms: 5}
`
	trace := `{"timestamp": 0, "input_length": 32, "output_length": 100, "hash_ids": [1, 2]}
{"timestamp": 20, "input_length": 32, "output_length": 10, "hash_ids": [3, 4]}
`
	for _, tc := range []struct {
		semantics, mixed string
		ttft             [2]float64
	}{
		{"real", "false", [2]float64{50, 100 - 20}},
		{"real", "true", [2]float64{50, 105 - 20}},
		{"mocker", "false", [2]float64{55, 110 - 20}},
	} {
		t.Run(tc.semantics+"_mixed_"+tc.mixed, func(t *testing.T) {
			cfg := strings.Replace(base, "%s", tc.semantics, 1)
			cfg = strings.Replace(cfg, "%s", tc.mixed, 1)
			rep, err := Predict(Inputs{Config: []byte(cfg), Trace: []byte(trace), TraceName: "t.jsonl", CapturePerRequest: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(rep.RequestsJSONL())), "\n")
			if len(lines) != 2 {
				t.Fatalf("%d records", len(lines))
			}
			for i, l := range lines {
				var r struct {
					TTFT float64 `json:"ttft_ms"`
				}
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatal(err)
				}
				if math.Abs(r.TTFT-tc.ttft[i]) > 1e-6 {
					t.Errorf("request %d: TTFT %v ms, want %v", i+1, r.TTFT, tc.ttft[i])
				}
			}
		})
	}
}
