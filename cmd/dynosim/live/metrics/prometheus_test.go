package metrics_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
	"github.com/dynosim/dynosim-web/internal/promtest"
)

// TestPrometheusScrapesMetrics serves both families to a real Prometheus
// and checks that it ingests them under their engine names and that PromQL
// selects them; it is skipped if no prometheus binary is installed.
func TestPrometheusScrapesMetrics(t *testing.T) {
	vllm := metrics.New("vllm", "llama", testCache)
	sglang := metrics.New("sglang", "llama", testCache)
	for _, m := range []*metrics.Metrics{vllm, sglang} {
		script(m)
	}
	vsrv := httptest.NewServer(vllm.Handler()) // httptest listens on 127.0.0.1
	defer vsrv.Close()
	ssrv := httptest.NewServer(sglang.Handler())
	defer ssrv.Close()
	host := func(url string) string { return strings.TrimPrefix(url, "http://") }

	prom := promtest.Start(t, []string{host(vsrv.URL), host(ssrv.URL)}, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	// Fails with Prometheus's own scrape error if it rejects an exposition.
	if err := prom.WaitTargets(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// Observations made after the first scrape must show up too.
	vllm.SetLoad(0, 0, 7, 2, 0.75)

	checks := []struct {
		query string
		want  func([]promtest.Sample) bool
	}{
		{`vllm:num_requests_running{worker="0",dp_rank="0",engine="0",model_name="llama"}`, value(7)},
		{`vllm:kv_cache_usage_perc{worker="1"}`, value(1)},
		{`vllm:time_to_first_token_seconds_bucket{worker="0",le="0.5"}`, value(1)},
		{`vllm:prompt_tokens_total{worker="0"}`, value(100)},
		{`sum(vllm:request_success_total{finished_reason="stop"})`, value(1)},
		{`sglang:num_running_reqs{worker="0",dp_rank="0",tp_rank="0"}`, value(3)},
		{`sglang:cache_hit_rate{worker="0"}`, value(0.4)},
		{`sglang:inter_token_latency_seconds_count{worker="0"}`, value(2)},
	}
	for _, c := range checks {
		got, err := prom.WaitFor(ctx, c.query, 2*time.Second, c.want)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		if name := got[0].Metric["__name__"]; !strings.HasPrefix(c.query, "sum(") && !strings.HasPrefix(c.query, name+"{") {
			t.Errorf("%s: series named %q", c.query, name)
		}
	}

	names, err := prom.MetricNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds_bucket",
		"vllm:prompt_tokens_total", "vllm:inter_token_latency_seconds_sum", "vllm:cache_config_info",
		"sglang:num_queue_reqs", "sglang:token_usage", "sglang:e2e_request_latency_seconds_bucket",
		"go_goroutines",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("Prometheus has not ingested %s", want)
		}
	}
}

// value returns a condition that holds when there is exactly one sample and
// it equals v.
func value(v float64) func([]promtest.Sample) bool {
	return func(s []promtest.Sample) bool { return len(s) == 1 && s[0].Value == v }
}
