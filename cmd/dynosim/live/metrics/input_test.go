package metrics_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
)

// TestBadInput feeds values the driver should never send and checks that
// nothing panics and that the documented clamping holds.
func TestBadInput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, backend := range []string{"vllm", "sglang", "trtllm"} {
		t.Run(backend, func(t *testing.T) {
			m := metrics.New(backend, "bad\xffname", metrics.Cache{}) // invalid UTF-8, no cache info
			calls := []func(){
				func() { m.SetLoad(0, 0, -3, -4, nan) },
				func() { m.SetLoad(0, 0, 1, 1, -inf) },
				func() { m.SetLoad(-1, 0, 1, 1, 0.5) },
				func() { m.SetLoad(0, -1, 1, 1, 0.5) },
				func() { m.SetLoad(metrics.MaxWorkers, 0, 1, 1, 0.5) },
				func() { m.SetLoad(0, metrics.MaxRanks, 1, 1, 0.5) },
				func() { m.Preempted(0, 0, -5) },
				func() { m.PrefixQuery(0, 0, -1, 3) },
				func() { m.PrefixQuery(0, 0, 10, 50) }, // hit clamped to 10
				func() { m.PrefixQuery(0, 0, 0, 0) },
				func() { m.FirstToken(0, 0, -1, nan, inf) },
				func() { m.Token(0, 0, nan) },
				func() { m.Token(0, 0, -inf) },
				func() { m.Token(0, 0, -0.5) },
				func() {
					m.Finished(0, 0, metrics.Request{Prompt: -1, Generated: -2, MaxTokens: -3, E2E: nan, Decode: -1, Inference: inf})
				},
				func() { m.Finished(0, 0, metrics.Request{Reason: "\xff\xfe"}) },
				func() { m.Finished(0, 0, metrics.Request{Reason: "cache_threshold", Generated: 2, Decode: nan}) },
				func() { m.ForgetWorker(metrics.MaxWorkers * 4) },
			}
			for i, call := range calls {
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("call %d panicked: %v", i, p)
						}
					}()
					call()
				}()
			}
			if _, err := m.Registry().Gather(); err != nil {
				t.Fatalf("gather after bad input: %v", err)
			}
			got := gather(t, m.Registry())
			if backend == "sglang" {
				if v := series(got, "sglang:cache_hit_rate", "worker", "0").GetGauge().GetValue(); v != 1 {
					t.Errorf("cache_hit_rate %g, want 1 (hit clamped to queried)", v)
				}
				if c := series(got, "sglang:time_to_first_token_seconds", "worker", "0").GetHistogram(); c.GetSampleCount() != 1 || c.GetSampleSum() != 0 {
					t.Errorf("ttft count %d sum %g, want 1 and 0 (negative clamped)", c.GetSampleCount(), c.GetSampleSum())
				}
				return
			}
			checks := []struct {
				name string
				got  float64
				want float64
			}{
				{"running", series(got, "vllm:num_requests_running", "worker", "0").GetGauge().GetValue(), 1},
				{"kv usage", series(got, "vllm:kv_cache_usage_perc", "worker", "0").GetGauge().GetValue(), 0},
				{"preemptions", series(got, "vllm:num_preemptions_total", "worker", "0").GetCounter().GetValue(), 0},
				{"prefix hits", series(got, "vllm:prefix_cache_hits_total", "worker", "0").GetCounter().GetValue(), 10},
				{"ttft count", float64(series(got, "vllm:time_to_first_token_seconds", "worker", "0").GetHistogram().GetSampleCount()), 1},
				{"queue count (NaN dropped)", float64(series(got, "vllm:request_queue_time_seconds", "worker", "0").GetHistogram().GetSampleCount()), 0},
				{"itl count (NaN, Inf dropped)", float64(series(got, "vllm:inter_token_latency_seconds", "worker", "0").GetHistogram().GetSampleCount()), 1},
				{"itl sum (negative clamped)", series(got, "vllm:inter_token_latency_seconds", "worker", "0").GetHistogram().GetSampleSum(), 0},
				{"error reasons (invalid UTF-8 and empty)", series(got, "vllm:request_success_total", "finished_reason", "error").GetCounter().GetValue(), 2},
				{"verbatim reason", series(got, "vllm:request_success_total", "finished_reason", "cache_threshold").GetCounter().GetValue(), 1},
				{"max_tokens unset", float64(series(got, "vllm:request_params_max_tokens", "worker", "0").GetHistogram().GetSampleCount()), 0},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
				}
			}
			if v := series(got, "vllm:num_requests_running", "worker", "0"); !strings.Contains(labelValue(v, "model_name"), "\uFFFD") {
				t.Errorf("model_name %q: invalid UTF-8 not replaced", labelValue(v, "model_name"))
			}
		})
	}
}

func TestNilMetrics(t *testing.T) {
	var m *metrics.Metrics
	m.SetLoad(0, 0, 1, 1, 1)
	m.Preempted(0, 0, 1)
	m.PrefixQuery(0, 0, 1, 1)
	m.FirstToken(0, 0, 1, 1, 1)
	m.Token(0, 0, 1)
	m.Finished(0, 0, metrics.Request{})
	m.ForgetWorker(0)
}

func TestParseBackend(t *testing.T) {
	tests := []struct {
		in   string
		want metrics.Backend
		ok   bool
	}{
		{"vllm", metrics.BackendVLLM, true},
		{" VLLM ", metrics.BackendVLLM, true},
		{"sglang", metrics.BackendSGLang, true},
		{"trtllm", metrics.BackendTRTLLM, true},
		{"TensorRT-LLM", metrics.BackendTRTLLM, true},
		{"", 0, false},
		{"tgi", 0, false},
	}
	for _, tc := range tests {
		got, err := metrics.ParseBackend(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBackend(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if tc.ok && got.String() == "" {
			t.Errorf("%v has no name", got)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New with an unknown backend did not panic")
		}
	}()
	metrics.New("tgi", "m", testCache)
}
