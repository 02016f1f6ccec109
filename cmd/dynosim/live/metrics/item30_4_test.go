package metrics_test

import (
	"testing"

	"github.com/dynosim/dynosim-web/cmd/dynosim/live/metrics"
)

// Issue 30 item 4: live mode publishes vLLM's speculative-decoding
// counters (vllm/v1/spec_decode/metrics.py: num_drafts, num_draft_tokens,
// num_accepted_tokens, exposed with _total), only once a rank drafts.
func TestItem30_4SpecDecodeMetrics(t *testing.T) {
	const (
		drafts   = "vllm:spec_decode_num_drafts_total"
		proposed = "vllm:spec_decode_num_draft_tokens_total"
		accepted = "vllm:spec_decode_num_accepted_tokens_total"
	)
	for _, tc := range []struct {
		name                  string
		backend               string
		calls                 [][3]int // drafts, draft tokens, accepted
		series                bool
		wantD, wantP, wantAcc float64
	}{
		{"no speculation: no series", "vllm", nil, false, 0, 0, 0},
		{"two passes add up", "vllm", [][3]int{{4, 12, 5}, {2, 6, 6}}, true, 6, 18, 11},
		{"accepted clamped to the drafts", "vllm", [][3]int{{1, 3, 9}, {1, 3, -2}}, true, 2, 6, 3},
		{"no drafts: ignored", "vllm", [][3]int{{0, 0, 0}}, false, 0, 0, 0},
		{"trtllm speaks vllm:*", "trtllm", [][3]int{{1, 3, 1}}, true, 1, 3, 1},
		{"sglang: not exported", "sglang", [][3]int{{1, 3, 1}}, false, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New(tc.backend, "m", testCache)
			m.SetLoad(0, 0, 1, 0, 0)
			for _, c := range tc.calls {
				m.SpecDecode(0, 0, c[0], c[1], c[2])
			}
			mfs := gather(t, m.Registry())
			if _, ok := mfs[drafts]; ok != tc.series {
				t.Fatalf("%s present %v, want %v", drafts, ok, tc.series)
			}
			if !tc.series {
				return
			}
			got := func(name string) float64 { return series(mfs, name, "worker", "0").GetCounter().GetValue() }
			if d, p, a := got(drafts), got(proposed), got(accepted); d != tc.wantD || p != tc.wantP || a != tc.wantAcc {
				t.Fatalf("drafts %v, draft tokens %v, accepted %v; want %v, %v, %v", d, p, a, tc.wantD, tc.wantP, tc.wantAcc)
			}
		})
	}
}
