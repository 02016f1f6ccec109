package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Issue 30 item 4: a speculative decode step is the proposer's k draft
// steps (DraftRatio of a target decode step each; 0 for n-gram) plus the
// target's verification of k+1 tokens per sequence; a draft ratio out of
// range is refused, naming it.
func TestItem30_4SpecStepPrice(t *testing.T) {
	fixed := timing.Fixed{Prefill: 20, Decode: 10}
	for _, tc := range []struct {
		name    string
		k       int
		ratio   float64
		model   timing.Model
		wantMs  float64 // -1: only > plain decode
		wantErr string
	}{
		{"eagle k=3 on fixed: drafts 3×0.1×10 + verify 10", 3, 0.1, fixed, 13, ""},
		{"ngram k=3 on fixed: verify only", 3, 0, fixed, 10, ""},
		{"eagle k=3 on polynomial: above a plain step", 3, 0.1, timing.Polynomial{}, -1, ""},
		{"ratio NaN refused", 3, math.NaN(), fixed, 0, "speculation.draft_ratio"},
		{"ratio above 1 refused", 3, 1.5, fixed, 0, "speculation.draft_ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfg4(64, 0, 0, false)
			cfg.Model = tc.model
			cfg.Spec = Speculation{NextN: tc.k, AcceptRates: []float64{0, 0, 0}, DraftRatio: tc.ratio}
			c, err := New(cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := c.spec.decodeTime(timing.Scale{}, tc.model, 4, 400, 256).Ms()
			plain := timing.Scale{}.Decode(tc.model, 4, 400, 100, 256).Ms()
			if tc.wantMs >= 0 && math.Abs(got-tc.wantMs) > 1e-9 || !(got >= plain) || tc.ratio > 0 && !(got > plain) {
				t.Fatalf("speculative step %v ms (plain %v), want %v", got, plain, tc.wantMs)
			}
		})
	}
}
