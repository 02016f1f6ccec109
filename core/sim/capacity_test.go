package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Issue 29 item 16: kv_cache.capacity.bytes near int64 max was accepted:
// its pool, cut to what the run can touch, was what the GPU check judged.
// The bytes are judged as given, and every message names the key with the
// value: an error under the roofline timing, a warning (and a run on the
// cut pool, which behaves as the huge one) under a timing that ignores
// the hardware. Both keys at once, or negative bytes, are refused.
func TestItem16CapacityBytesJudgedAsGiven(t *testing.T) {
	const huge = "9223372036854775807"
	const key = "engine.workers.aggregated.kv_cache.capacity.bytes: " + huge + " bytes of KV are 8589934592.0 GiB per GPU"
	cfg := func(capacity, timing string) []byte {
		return []byte("engine: {workers: {aggregated: {kv_cache: {capacity: " + capacity + "}, timing: {type: " + timing + "}}}}\ntraffic: {stop: {requests: 5}}")
	}
	_, err := Predict(Inputs{Config: cfg("{type: fixed, bytes: "+huge+"}", "default")}, nil)
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "give fewer bytes") || !errors.Is(err, timing.ErrDoesNotFit) {
		t.Fatalf("roofline timing: err = %v\nwant it to contain %q", err, key)
	}
	rep, err := Predict(Inputs{Config: cfg("{type: fixed, bytes: "+huge+"}", "polynomial")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], key) {
		t.Fatalf("warnings %q, want one containing %q", rep.Warnings, key)
	}
	pool := rep.Deployment.Pools[0]
	if pool.Fits || pool.KVBytes < 9e18 || pool.KVBlocks > 1000 || rep.Summary["completed_requests"] != 5 {
		t.Fatalf("pool %+v, completed %v: want the given bytes judged, a pool cut to the run's 5 requests, all completed", pool, rep.Summary["completed_requests"])
	}
	for capacity, want := range map[string]string{
		"{type: fixed, blocks: 10, bytes: 1000000}": "engine.workers.aggregated.kv_cache.capacity: give blocks or bytes, not both (got blocks 10, bytes 1000000)",
		"{type: fixed, bytes: -1}":                  "engine.workers.aggregated.kv_cache.capacity.bytes: must be ≥ 1, got -1",
	} {
		if _, err := Predict(Inputs{Config: cfg(capacity, "polynomial")}, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", capacity, err, want)
		}
	}
}

// Issue 29 item 16: an HF config with kv_lora_rank 1 and zero head
// dimensions (2 bytes of KV per token) sized a pool of billions of blocks
// and ran out of memory. Such a pool is now cut to what the run can touch
// (TestHostileTinyKVPerTokenCapsPool), and an MLA model whose heads have
// no query/key or value dimensions is refused, naming the file's fields.
func TestItem16MLAZeroHeadDims(t *testing.T) {
	for _, tc := range []struct{ dims, want string }{
		{`"qk_nope_head_dim": 0, "qk_rope_head_dim": 0, "v_head_dim": 0`, "tiny.json: qk_nope_head_dim, qk_rope_head_dim: an MLA model (kv_lora_rank 1) needs a query/key head size > 0, got 0 + 0"},
		{`"qk_nope_head_dim": 8, "v_head_dim": 0`, "tiny.json: v_head_dim: must be > 0 for an MLA model (kv_lora_rank 1), got 0"},
		{`"qk_rope_head_dim": 4, "v_head_dim": 8`, ""},
	} {
		model := []byte(`{"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 8, "intermediate_size": 128,
		  "vocab_size": 100, "kv_lora_rank": 1, ` + tc.dims + `, "torch_dtype": "bfloat16"}`)
		cfg := "traffic: {source: {type: synthetic, input_tokens: 100, output_tokens: 3}, stop: {requests: 5}}\nengine: {model: tiny.json}"
		rep, err := Predict(Inputs{Config: []byte(cfg), ModelConfig: model, ModelConfigName: "tiny.json"}, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.dims, err)
		case tc.want == "" && rep.Workers[0].TotalBlocks > 1000:
			t.Errorf("%s: %d blocks, want the run's need", tc.dims, rep.Workers[0].TotalBlocks)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v\nwant it to contain %q", tc.dims, err, tc.want)
		}
	}
}
