package metrics

// Histogram bucket upper bounds, as the engines define them, so that
// histogram_quantile over a simulated worker interpolates exactly as it
// would over the real engine.

// vLLM (vllm/v1/metrics/loggers.py).
var (
	// vllmTTFTBuckets bound vllm:time_to_first_token_seconds.
	vllmTTFTBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560,
	}
	// vllmTokenLatencyBuckets bound vllm:inter_token_latency_seconds, its
	// deprecated alias vllm:time_per_output_token_seconds and
	// vllm:request_time_per_output_token_seconds.
	vllmTokenLatencyBuckets = []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80,
	}
	// vllmRequestLatencyBuckets bound the per-request phase histograms
	// (e2e, queue, prefill, decode, inference).
	vllmRequestLatencyBuckets = []float64{
		0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60,
		120, 240, 480, 960, 1920, 7680,
	}
)

// SGLang (sglang/srt/metrics/collector.py), the defaults when no
// --bucket-* server argument overrides them.
var (
	sglangTTFTBuckets = []float64{
		0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400,
	}
	sglangITLBuckets = []float64{
		0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035,
		0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1, 2, 4, 6, 8,
	}
	sglangE2EBuckets = []float64{
		0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100,
		200, 400, 600, 1200, 1800, 2400,
	}
	sglangQueueBuckets = []float64{
		0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80,
		90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400,
		1600, 1800, 2000, 2500, 3000,
	}
)

// buckets125 returns 1, 2, 5, 10, 20, 50, … up to and including limit: the
// bounds vLLM gives its token-count histograms (build_1_2_5_buckets with
// max_model_len). limit < 1 yields the single bound 1; limit is capped at
// 1e12 tokens, which keeps the arithmetic far from overflow.
func buckets125(limit int) []float64 {
	limit = min(limit, 1_000_000_000_000)
	out := []float64{1}
	for p := 1; ; p *= 10 {
		for _, m := range [...]int{1, 2, 5} {
			v := m * p
			if v == 1 {
				continue
			}
			if v > limit {
				return out
			}
			out = append(out, float64(v))
		}
	}
}
