package sim

import (
	"bytes"
	"testing"

	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// TestItem32_6SyntheticDistributions: a synthetic source with length
// distributions gives byte-identical reports for the same
// traffic.load.seed, another workload for another seed, and the prompt
// lengths its distribution asks for.
func TestItem32_6SyntheticDistributions(t *testing.T) {
	const cfg = `
traffic:
  source: {type: synthetic, input_tokens: {mean: 256, stddev: 64}, output_tokens: {min: 4, max: 12}}
  load: {type: poisson, requests_per_second: 50, seed: 7}
  stop: {requests: 60}
engine: {workers: {aggregated: {timing: {type: polynomial}}}}
`
	run := func(sets ...string) (*report.Report, []byte) {
		rep, err := Predict(Inputs{Config: []byte(cfg), Sets: sets, CapturePerRequest: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range report.WallClockKeys {
			rep.Summary[k] = 0
		}
		j, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		return rep, j
	}
	rep, a := run()
	_, b := run()
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave two reports")
	}
	if _, c := run("traffic.load.seed=8"); bytes.Equal(a, c) {
		t.Error("seed 8 gave seed 7's report")
	}
	lengths := map[int]bool{}
	for _, r := range rep.Requests() {
		lengths[r.InputLength] = true
		if r.RequestedOutputLength < 4 || r.RequestedOutputLength > 12 {
			t.Errorf("request %d asks for %d tokens, outside [4, 12]", r.UUID, r.RequestedOutputLength)
		}
	}
	if len(lengths) < 20 {
		t.Errorf("%d distinct prompt lengths in 60 requests of stddev 64", len(lengths))
	}
	if m := rep.Summary[schema.TotalInputTokens] / rep.Summary[schema.CompletedRequests]; m < 230 || m > 285 {
		t.Errorf("mean prompt %.1f tokens, want ≈ 256", m)
	}
}
