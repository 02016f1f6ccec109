package metrics_test

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
)

// TestBuckets125 checks the bounds of vLLM's token-count histograms: 1-2-5
// steps up to max_model_len, which defaults to the rank's KV capacity.
func TestBuckets125(t *testing.T) {
	tests := []struct {
		cache metrics.Cache
		want  string
	}{
		{metrics.Cache{MaxModelLen: 2048}, "1 2 5 10 20 50 100 200 500 1000 2000"},
		{metrics.Cache{MaxModelLen: 1}, "1"},
		{metrics.Cache{BlockSize: 16, GPUBlocksPerRank: 10}, "1 2 5 10 20 50 100"},
		{metrics.Cache{}, "1 2 5 10 20 50 100 200 500 1000 2000 5000 10000 20000 50000 100000"},
	}
	for _, tc := range tests {
		m := metrics.New("vllm", "m", tc.cache)
		m.Finished(0, 0, metrics.Request{Prompt: 1, Reason: "stop"})
		h := series(gather(t, m.Registry()), "vllm:request_prompt_tokens", "worker", "0").GetHistogram()
		var bounds []string
		for _, b := range h.GetBucket() {
			bounds = append(bounds, formatFloat(b.GetUpperBound()))
		}
		if got := strings.Join(bounds, " "); got != tc.want {
			t.Errorf("%+v: token buckets %s, want %s", tc.cache, got, tc.want)
		}
	}
}

// TestTokenAllocs keeps the per-token path allocation-free in ordinary test
// runs, not only under -bench.
func TestTokenAllocs(t *testing.T) {
	for _, backend := range []string{"vllm", "sglang"} {
		m := metrics.New(backend, "m", testCache)
		m.Token(3, 1, 0.01) // bind the rank
		if n := testing.AllocsPerRun(1000, func() { m.Token(3, 1, 0.02) }); n != 0 {
			t.Errorf("%s: Token allocates %v times per call", backend, n)
		}
		if n := testing.AllocsPerRun(1000, func() { m.SetLoad(3, 1, 4, 2, 0.5) }); n != 0 {
			t.Errorf("%s: SetLoad allocates %v times per call", backend, n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			m.Finished(3, 1, metrics.Request{Prompt: 9, Generated: 4, MaxTokens: 8, E2E: 1, Decode: 0.5, Inference: 0.9, Reason: "length"})
		}); n != 0 {
			t.Errorf("%s: Finished allocates %v times per call", backend, n)
		}
	}
}

func BenchmarkToken(b *testing.B) {
	for _, backend := range []string{"vllm", "sglang"} {
		b.Run(backend, func(b *testing.B) {
			m := metrics.New(backend, "m", testCache)
			for w := range 8 {
				m.Token(w, 0, 0.01) // bind the ranks: steady state is what counts
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				m.Token(i&7, 0, 0.015)
			}
		})
	}
}
