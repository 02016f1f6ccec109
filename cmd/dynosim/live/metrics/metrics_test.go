package metrics_test

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
)

var testCache = metrics.Cache{BlockSize: 16, GPUBlocksPerRank: 1000, CPUBlocksPerRank: 8, MaxModelLen: 100}

// script is the observation sequence the exposition tests feed: two workers,
// one busy rank each, a request streamed to completion on worker 0.
func script(m *metrics.Metrics) {
	m.SetLoad(0, 0, 3, 2, 0.25)
	m.SetLoad(1, 1, 1, 0, 1.5) // clamped to 1
	m.Preempted(0, 0, 2)
	m.PrefixQuery(0, 0, 100, 40)
	m.FirstToken(0, 0, 0.5, 0.125, 0.25)
	m.Token(0, 0, 0.0625)
	m.Token(0, 0, 0.25)
	m.Finished(0, 0, metrics.Request{Prompt: 100, Generated: 3, MaxTokens: 16, E2E: 0.8125, Decode: 0.3125, Inference: 0.5625, Reason: "stop"})
}

func TestExposition(t *testing.T) {
	tests := []struct {
		backend string
		want    string
		names   []string
	}{
		{
			backend: "vllm",
			want: `
# HELP vllm:num_requests_running Requests in the rank's running batch.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{dp_rank="0",engine="0",model_name="m",worker="0"} 3
vllm:num_requests_running{dp_rank="1",engine="1",model_name="m",worker="1"} 1
# HELP vllm:kv_cache_usage_perc Fraction of the rank's KV-cache blocks in use (1 means full).
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{dp_rank="0",engine="0",model_name="m",worker="0"} 0.25
vllm:kv_cache_usage_perc{dp_rank="1",engine="1",model_name="m",worker="1"} 1
# HELP vllm:cache_config_info KV-cache configuration of the rank; the value is always 1.
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",dp_rank="0",engine="0",model_name="m",num_cpu_blocks="8",num_gpu_blocks="1000",worker="0"} 1
vllm:cache_config_info{block_size="16",cache_dtype="auto",dp_rank="1",engine="1",model_name="m",num_cpu_blocks="8",num_gpu_blocks="1000",worker="1"} 1
# HELP vllm:num_preemptions_total Requests preempted by the rank's scheduler.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{dp_rank="0",engine="0",model_name="m",worker="0"} 2
vllm:num_preemptions_total{dp_rank="1",engine="1",model_name="m",worker="1"} 0
# HELP vllm:prefix_cache_hits_total Prompt tokens found in the prefix cache.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{dp_rank="0",engine="0",model_name="m",worker="0"} 40
vllm:prefix_cache_hits_total{dp_rank="1",engine="1",model_name="m",worker="1"} 0
# HELP vllm:generation_tokens_total Tokens generated.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{dp_rank="0",engine="0",model_name="m",worker="0"} 3
vllm:generation_tokens_total{dp_rank="1",engine="1",model_name="m",worker="1"} 0
# HELP vllm:prompt_tokens_total Prompt tokens of finished requests.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{dp_rank="0",engine="0",model_name="m",worker="0"} 100
vllm:prompt_tokens_total{dp_rank="1",engine="1",model_name="m",worker="1"} 0
# HELP vllm:request_success_total Requests finished, by finish reason.
# TYPE vllm:request_success_total counter
vllm:request_success_total{dp_rank="0",engine="0",finished_reason="abort",model_name="m",worker="0"} 0
vllm:request_success_total{dp_rank="0",engine="0",finished_reason="error",model_name="m",worker="0"} 0
vllm:request_success_total{dp_rank="0",engine="0",finished_reason="length",model_name="m",worker="0"} 0
vllm:request_success_total{dp_rank="0",engine="0",finished_reason="stop",model_name="m",worker="0"} 1
vllm:request_success_total{dp_rank="1",engine="1",finished_reason="abort",model_name="m",worker="1"} 0
vllm:request_success_total{dp_rank="1",engine="1",finished_reason="error",model_name="m",worker="1"} 0
vllm:request_success_total{dp_rank="1",engine="1",finished_reason="length",model_name="m",worker="1"} 0
vllm:request_success_total{dp_rank="1",engine="1",finished_reason="stop",model_name="m",worker="1"} 0
# HELP vllm:request_prompt_tokens Prompt tokens per finished request.
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="1"} 0
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="2"} 0
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="5"} 0
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="10"} 0
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="20"} 0
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="50"} 0
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="100"} 1
vllm:request_prompt_tokens_bucket{dp_rank="0",engine="0",model_name="m",worker="0",le="+Inf"} 1
vllm:request_prompt_tokens_sum{dp_rank="0",engine="0",model_name="m",worker="0"} 100
vllm:request_prompt_tokens_count{dp_rank="0",engine="0",model_name="m",worker="0"} 1
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="1"} 0
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="2"} 0
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="5"} 0
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="10"} 0
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="20"} 0
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="50"} 0
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="100"} 0
vllm:request_prompt_tokens_bucket{dp_rank="1",engine="1",model_name="m",worker="1",le="+Inf"} 0
vllm:request_prompt_tokens_sum{dp_rank="1",engine="1",model_name="m",worker="1"} 0
vllm:request_prompt_tokens_count{dp_rank="1",engine="1",model_name="m",worker="1"} 0
`,
			names: []string{
				"vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:cache_config_info",
				"vllm:num_preemptions_total", "vllm:prefix_cache_hits_total", "vllm:generation_tokens_total",
				"vllm:prompt_tokens_total", "vllm:request_success_total", "vllm:request_prompt_tokens",
			},
		},
		{
			backend: "sglang",
			want: `
# HELP sglang:num_running_reqs Requests in the rank's running batch.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 3
sglang:num_running_reqs{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 1
# HELP sglang:num_queue_reqs Requests in the rank's waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 2
sglang:num_queue_reqs{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 0
# HELP sglang:token_usage Fraction of the rank's KV-cache token slots in use.
# TYPE sglang:token_usage gauge
sglang:token_usage{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 0.25
sglang:token_usage{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 1
# HELP sglang:num_used_tokens KV-cache token slots in use on the rank.
# TYPE sglang:num_used_tokens gauge
sglang:num_used_tokens{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 4000
sglang:num_used_tokens{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 16000
# HELP sglang:max_total_num_tokens KV-cache token slots of the rank.
# TYPE sglang:max_total_num_tokens gauge
sglang:max_total_num_tokens{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 16000
sglang:max_total_num_tokens{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 16000
# HELP sglang:cache_hit_rate Prefix-cache hit rate of the rank's last prefill, in tokens.
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 0.4
sglang:cache_hit_rate{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 0
# HELP sglang:num_retracted_requests_total Requests retracted (preempted) by the rank's scheduler.
# TYPE sglang:num_retracted_requests_total counter
sglang:num_retracted_requests_total{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 2
sglang:num_retracted_requests_total{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 0
# HELP sglang:cached_tokens_total Prompt tokens served from the prefix cache.
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 40
sglang:cached_tokens_total{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 0
# HELP sglang:generation_tokens_total Tokens generated by finished requests.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 3
sglang:generation_tokens_total{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 0
# HELP sglang:num_requests_total Requests finished.
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="0"} 1
sglang:num_requests_total{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0",worker="1"} 0
`,
			names: []string{
				"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", "sglang:num_used_tokens",
				"sglang:max_total_num_tokens", "sglang:cache_hit_rate", "sglang:num_retracted_requests_total",
				"sglang:cached_tokens_total", "sglang:generation_tokens_total", "sglang:num_requests_total",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.backend, func(t *testing.T) {
			m := metrics.New(tc.backend, "m", testCache)
			script(m)
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(tc.want), tc.names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHistograms checks count and sum of every latency histogram after the
// script, and a few bucket counts that pin the engines' bounds.
func TestHistograms(t *testing.T) {
	type want struct {
		count uint64
		sum   float64
	}
	tests := []struct {
		backend string
		want    map[string]want
		// buckets maps "name le" to the cumulative count of worker 0.
		buckets map[string]uint64
	}{
		{
			backend: "vllm",
			want: map[string]want{
				"vllm:time_to_first_token_seconds":           {1, 0.5},
				"vllm:request_queue_time_seconds":            {1, 0.125},
				"vllm:request_prefill_time_seconds":          {1, 0.25},
				"vllm:inter_token_latency_seconds":           {2, 0.3125},
				"vllm:time_per_output_token_seconds":         {2, 0.3125},
				"vllm:request_time_per_output_token_seconds": {1, 0.15625},
				"vllm:e2e_request_latency_seconds":           {1, 0.8125},
				"vllm:request_decode_time_seconds":           {1, 0.3125},
				"vllm:request_inference_time_seconds":        {1, 0.5625},
				"vllm:request_generation_tokens":             {1, 3},
				"vllm:request_max_num_generation_tokens":     {1, 3},
				"vllm:request_params_max_tokens":             {1, 16},
				"vllm:request_prompt_tokens":                 {1, 100},
			},
			buckets: map[string]uint64{
				"vllm:time_to_first_token_seconds 0.25":  0,
				"vllm:time_to_first_token_seconds 0.5":   1,
				"vllm:time_to_first_token_seconds 2560":  1,
				"vllm:inter_token_latency_seconds 0.05":  0,
				"vllm:inter_token_latency_seconds 0.075": 1,
				"vllm:inter_token_latency_seconds 80":    2,
				"vllm:e2e_request_latency_seconds 0.8":   0,
				"vllm:e2e_request_latency_seconds 1":     1,
				"vllm:e2e_request_latency_seconds 7680":  1,
				"vllm:request_params_max_tokens 10":      0,
				"vllm:request_params_max_tokens 20":      1,
			},
		},
		{
			backend: "sglang",
			want: map[string]want{
				"sglang:time_to_first_token_seconds": {1, 0.5},
				"sglang:queue_time_seconds":          {1, 0.125},
				"sglang:inter_token_latency_seconds": {2, 0.3125},
				"sglang:e2e_request_latency_seconds": {1, 0.8125},
			},
			buckets: map[string]uint64{
				"sglang:time_to_first_token_seconds 0.4":  0,
				"sglang:time_to_first_token_seconds 0.6":  1,
				"sglang:inter_token_latency_seconds 0.06": 0,
				"sglang:inter_token_latency_seconds 0.08": 1,
				"sglang:queue_time_seconds 0":             0,
				"sglang:queue_time_seconds 0.2":           1,
				"sglang:e2e_request_latency_seconds 2400": 1,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.backend, func(t *testing.T) {
			m := metrics.New(tc.backend, "m", testCache)
			script(m)
			got := gather(t, m.Registry())
			for name, w := range tc.want {
				h := series(got, name, "worker", "0").GetHistogram()
				if h.GetSampleCount() != w.count || math.Abs(h.GetSampleSum()-w.sum) > 1e-12 {
					t.Errorf("%s: count %d sum %g, want %d %g", name, h.GetSampleCount(), h.GetSampleSum(), w.count, w.sum)
				}
			}
			for key, w := range tc.buckets {
				name, le, _ := strings.Cut(key, " ")
				h := series(got, name, "worker", "0").GetHistogram()
				found := false
				for _, b := range h.GetBucket() {
					if formatFloat(b.GetUpperBound()) == le {
						found = true
						if b.GetCumulativeCount() != w {
							t.Errorf("%s le=%s: %d, want %d", name, le, b.GetCumulativeCount(), w)
						}
					}
				}
				if !found {
					t.Errorf("%s: no bucket le=%s", name, le)
				}
			}
		})
	}
}

// TestLabelSets checks that every series of a backend's family carries
// exactly its label names, and that no other family is registered.
func TestLabelSets(t *testing.T) {
	tests := []struct {
		backend, prefix, other string
		labels                 []string
		extra                  map[string][]string
	}{
		{
			backend: "vllm", prefix: "vllm:", other: "sglang:",
			labels: []string{"dp_rank", "engine", "model_name", "worker"},
			extra: map[string][]string{
				"vllm:request_success_total": {"finished_reason"},
				"vllm:cache_config_info":     {"block_size", "cache_dtype", "num_cpu_blocks", "num_gpu_blocks"},
			},
		},
		{backend: "trtllm", prefix: "vllm:", other: "sglang:", labels: []string{"dp_rank", "engine", "model_name", "worker"},
			extra: map[string][]string{
				"vllm:request_success_total": {"finished_reason"},
				"vllm:cache_config_info":     {"block_size", "cache_dtype", "num_cpu_blocks", "num_gpu_blocks"},
			},
		},
		{backend: "sglang", prefix: "sglang:", other: "vllm:", labels: []string{"dp_rank", "engine_type", "model_name", "pp_rank", "tp_rank", "worker"}},
	}
	for _, tc := range tests {
		t.Run(tc.backend, func(t *testing.T) {
			m := metrics.New(tc.backend, "m", testCache)
			script(m)
			families := 0
			for name, mf := range gather(t, m.Registry()) {
				if strings.HasPrefix(name, tc.other) {
					t.Errorf("%s registered for backend %s", name, tc.backend)
				}
				if !strings.HasPrefix(name, tc.prefix) {
					continue
				}
				families++
				want := slices.Sorted(slices.Values(append(slices.Clone(tc.labels), tc.extra[name]...)))
				for _, s := range mf.GetMetric() {
					var got []string
					for _, lp := range s.GetLabel() {
						got = append(got, lp.GetName())
					}
					sort.Strings(got)
					if !slices.Equal(got, want) {
						t.Errorf("%s labels %v, want %v", name, got, want)
					}
				}
			}
			if families == 0 {
				t.Fatalf("no %s families", tc.prefix)
			}
		})
	}
}

func TestForgetWorker(t *testing.T) {
	for _, backend := range []string{"vllm", "sglang"} {
		t.Run(backend, func(t *testing.T) {
			m := metrics.New(backend, "m", testCache)
			for w := range 3 {
				for r := range 2 {
					m.SetLoad(w, r, 1, 1, 0.5)
					m.Preempted(w, r, 5)
					m.FirstToken(w, r, 0.1, 0.01, 0.09)
					m.Finished(w, r, metrics.Request{Prompt: 10, Generated: 1, Reason: "abort"})
				}
			}
			m.ForgetWorker(1)
			m.ForgetWorker(7)  // never seen
			m.ForgetWorker(-1) // ignored
			if n := countWorker(t, m, "1"); n != 0 {
				t.Errorf("%d series of worker 1 after ForgetWorker", n)
			}
			if n0, n2 := countWorker(t, m, "0"), countWorker(t, m, "2"); n0 == 0 || n0 != n2 {
				t.Errorf("workers 0 and 2 have %d and %d series, want equal and > 0", n0, n2)
			}
			// The index comes back from zero.
			m.Preempted(1, 0, 1)
			name := map[string]string{"vllm": "vllm:num_preemptions_total", "sglang": "sglang:num_retracted_requests_total"}[backend]
			got := gather(t, m.Registry())
			if v := series(got, name, "worker", "1").GetCounter().GetValue(); v != 1 {
				t.Errorf("%s of re-added worker 1 = %g, want 1", name, v)
			}
			if v := series(got, name, "worker", "2").GetCounter().GetValue(); v != 5 {
				t.Errorf("%s of worker 2 = %g, want 5", name, v)
			}
		})
	}
}

// gather returns the registry's families by name.
func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// series returns the first series of a family whose label has the value;
// an empty *dto.Metric (all getters zero) if there is none.
func series(mfs map[string]*dto.MetricFamily, name, label, value string) *dto.Metric {
	for _, s := range mfs[name].GetMetric() {
		if labelValue(s, label) == value {
			return s
		}
	}
	return &dto.Metric{}
}

func labelValue(s *dto.Metric, label string) string {
	for _, lp := range s.GetLabel() {
		if lp.GetName() == label {
			return lp.GetValue()
		}
	}
	return ""
}

// countWorker counts the series, over all families, of one worker.
func countWorker(t *testing.T, m *metrics.Metrics, worker string) int {
	t.Helper()
	n := 0
	for _, mf := range gather(t, m.Registry()) {
		for _, s := range mf.GetMetric() {
			if labelValue(s, "worker") == worker {
				n++
			}
		}
	}
	return n
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
