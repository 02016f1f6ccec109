package live

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/internal/patience"
)

// Issue 30 item 4: a live server with speculative decoding publishes
// vLLM's spec_decode counters, consistent with the tokens it streamed:
// every request-forward proposes k drafts and emits 1 + its accepted ones.
// Without speculation the counters are absent, as in vLLM.
func TestItem30_4SpecDecodeLive(t *testing.T) {
	const k = 3
	for _, tc := range []struct {
		name string
		sets []string
		want bool
	}{
		{"eagle", []string{"engine.speculation.kind=eagle", fmt.Sprintf("engine.speculation.num_speculative_tokens=%d", k)}, true},
		{"ngram", []string{"engine.speculation.kind=ngram", fmt.Sprintf("engine.speculation.num_speculative_tokens=%d", k)}, true},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, hs := start(t, twoWorkers, Options{Inputs: sim.Inputs{Sets: tc.sets}})
			resp := post(t, context.Background(), hs.URL+"/v1/completions", `{"prompt":"hello there","max_tokens":40,"stream":true}`)
			events(t, resp.Body)
			resp.Body.Close()
			var m string
			// The counters follow the pass's end, which may come just after
			// the stream's last token: wait until both are exported.
			patience.Until(t, "the 40 tokens exported", func() (bool, string) {
				m = scrape(t, hs.URL)
				emitted := metricSum(m, "vllm:spec_decode_num_drafts_total") + metricSum(m, "vllm:spec_decode_num_accepted_tokens_total")
				return metricSum(m, "vllm:generation_tokens_total") == 40 && (!tc.want || emitted == 40), grep(m, "generation_tokens", "spec_decode")
			})
			drafts := metricSum(m, "vllm:spec_decode_num_drafts_total")
			proposed := metricSum(m, "vllm:spec_decode_num_draft_tokens_total")
			accepted := metricSum(m, "vllm:spec_decode_num_accepted_tokens_total")
			if !tc.want {
				if strings.Contains(m, "vllm:spec_decode") {
					t.Fatalf("spec_decode series without speculation:\n%s", grep(m, "spec_decode"))
				}
				return
			}
			if !(drafts >= 1 && proposed == k*drafts && accepted >= 0 && accepted <= proposed) {
				t.Fatalf("drafts %v, draft tokens %v, accepted %v for 40 tokens:\n%s", drafts, proposed, accepted, grep(m, "spec_decode"))
			}
		})
	}
}
