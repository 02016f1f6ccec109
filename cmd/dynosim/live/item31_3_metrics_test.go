package live

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/sim"
)

// TestItem31_3MetricsBeforeAnyRequest: /metrics before any request lists
// every worker and DP rank (gauges at zero, counters at zero), and a
// disaggregated deployment's series carry the worker's pool role as
// worker_type.
func TestItem31_3MetricsBeforeAnyRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     string
		sets    []string
		series  string // a gauge every rank has
		workers int
		ranks   int
		roles   []string // worker_type per worker; nil: no such label
	}{
		{"vllm, 2 workers × 2 DP ranks", twoWorkers, []string{"engine.workers.aggregated.parallelism.attention_data=2"},
			"vllm:num_requests_running", 2, 2, nil},
		{"sglang, 3 workers", twoWorkers, []string{"engine.backend=sglang", "engine.workers.aggregated.parallelism.replicas=3"},
			"sglang:num_running_reqs", 3, 1, nil},
		{"disaggregated, 1 prefill + 2 decode", "engine: {mode: disaggregated, kv_transfer: {bandwidth_gb_per_second: 50}}\n",
			[]string{"engine.workers.prefill.parallelism.replicas=1", "engine.workers.decode.parallelism.replicas=2"},
			"vllm:num_requests_running", 3, 1, []string{"prefill", "decode", "decode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, hs := start(t, tc.cfg, Options{Inputs: sim.Inputs{Sets: tc.sets}})
			if s.d.live.Workers() != tc.workers {
				t.Fatalf("%d workers, want %d", s.d.live.Workers(), tc.workers)
			}
			m := scrape(t, hs.URL)
			lines := grep(m, tc.series+"{")
			if n := strings.Count(lines, "\n") + 1; lines == "" || n != tc.workers*tc.ranks {
				t.Fatalf("%d %s series before any request, want %d:\n%s", n, tc.series, tc.workers*tc.ranks, lines)
			}
			for w := range tc.workers {
				for r := range tc.ranks {
					found := ""
					for _, l := range strings.Split(lines, "\n") {
						if strings.Contains(l, fmt.Sprintf(`worker="%d"`, w)) && strings.Contains(l, fmt.Sprintf(`dp_rank="%d"`, r)) {
							found = l
						}
					}
					if found == "" || !strings.HasSuffix(found, " 0") {
						t.Errorf("worker %d rank %d: %q in\n%s", w, r, found, lines)
					}
					if tc.roles != nil && !strings.Contains(found, `worker_type="`+tc.roles[w]+`"`) {
						t.Errorf("worker %d: %q has no worker_type=%q", w, found, tc.roles[w])
					}
					if tc.roles == nil && strings.Contains(found, "worker_type") {
						t.Errorf("aggregated series with a worker_type: %q", found)
					}
				}
			}
			if tc.series == "vllm:num_requests_running" && strings.Count(grep(m, `vllm:request_success_total{`), `finished_reason="length"`) != tc.workers*tc.ranks {
				t.Errorf("request_success_total before any request:\n%s", grep(m, "vllm:request_success_total{"))
			}
		})
	}
}
