package live

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/sim"
)

// Issue 29 item 6: under fixed, polynomial or profile timing (no frontend
// latency: a request is routed as it is submitted) every per-request
// series of /metrics stayed 0, because the request was routed before the
// driver registered it and its worker was never recorded. After one
// completion under each, the per-request series count it.
func TestPerRequestMetricsUnderFixedTiming(t *testing.T) {
	profile, err := os.ReadFile("../../../timing/testdata/perf_data.npz")
	if err != nil {
		t.Fatal(err)
	}
	const one = "engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: 2}\n"
	for _, tc := range []struct {
		name, cfg string
		in        sim.Inputs
	}{
		{"fixed", one + "      timing: {type: fixed, prefill_ms: 2, decode_ms: 1}\n", sim.Inputs{}},
		{"polynomial", one + "      timing: {type: polynomial}\n", sim.Inputs{}},
		{"profile", one, sim.Inputs{Profile: profile, ProfileName: "perf_data.npz"}},
		{"roofline", one, sim.Inputs{}}, // the default: it had a frontend latency and worked
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, hs := start(t, tc.cfg, Options{Inputs: tc.in})
			// Long enough to fill blocks, sent twice: the second hits the
			// prefix cache of the first's worker (round robin over two:
			// the third request).
			prompt := `"` + strings.Repeat("lorem ipsum dolor sit amet ", 40) + `"`
			for range 3 {
				resp := post(t, context.Background(), hs.URL+"/v1/completions", `{"prompt":`+prompt+`,"max_tokens":5,"stream":true}`)
				events(t, resp.Body)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			m := scrape(t, hs.URL)
			for _, c := range []struct {
				name string
				want float64
			}{
				{"vllm:request_success_total", 3},
				{"vllm:generation_tokens_total", 15},
				{"vllm:time_to_first_token_seconds_count", 3},
				{"vllm:inter_token_latency_seconds_count", 12},
				{"vllm:e2e_request_latency_seconds_count", 3},
				{"vllm:request_generation_tokens_count", 3},
			} {
				if got := metricSum(m, c.name); got != c.want {
					t.Errorf("%s = %v, want %v", c.name, got, c.want)
				}
			}
			if metricSum(m, "vllm:prompt_tokens_total") == 0 || metricSum(m, "vllm:prefix_cache_queries_total") == 0 || metricSum(m, "vllm:prefix_cache_hits_total") == 0 {
				t.Errorf("prompt and prefix-cache series stayed 0:\n%s", grep(m, "prompt_tokens_total", "prefix_cache"))
			}
		})
	}
}
