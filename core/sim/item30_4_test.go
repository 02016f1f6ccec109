package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// item30_4Trace is 6 requests of 512 prompt and 128 output tokens, 5 s
// apart: each decodes alone (batch 1), so a pass's cost is known.
func item30_4Trace() []byte {
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 512, "output_length": 128, "hash_ids": [%d]}`+"\n", i*5000, i+1)
	}
	return []byte(b.String())
}

// item30_4ITL is the mean ITL of the trace under the timing (YAML flow
// map) and speculation (YAML flow map, "" for none).
func item30_4ITL(t *testing.T, tm, spec string) float64 {
	t.Helper()
	cfg := "traffic: {source: {type: trace, format: mooncake, block_size: 512}}\n" +
		"engine:\n  workers: {aggregated: {timing: " + tm + "}}\n"
	if spec != "" {
		cfg += "  speculation: " + spec + "\n"
	}
	rep, err := Predict(Inputs{Config: []byte(cfg), Trace: item30_4Trace(), TraceName: "spec.jsonl"}, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", tm, spec, err)
	}
	return rep.Summary[schema.ITL.Key(schema.Mean)]
}

// Issue 30 item 4: speculative decoding costs something. EAGLE with 3
// drafts at 0 % acceptance gave the same ITL as no speculation. Now each
// pass runs the draft head once per draft token and verifies k+1 tokens
// per sequence (timing/spec.go): at 0 % acceptance EAGLE is slower than no
// speculation, at the reference's default acceptance (0.85, 0.3: the
// typical rates the catalog of defaults carries) faster, and at 100 % the
// ITL is bounded below by the verify pass over k+1 tokens; ngram drafts
// cost nothing but the verification.
func TestItem30_4SpecDecodeCost(t *testing.T) {
	const k = 3
	roof, err := timing.NewRoofline(timing.RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, timing string
		verifyMs     float64 // the verify pass of k+1 tokens at batch 1 over the prompt
	}{
		{"roofline", "{type: default}", timing.Scale{}.Verify(roof, 1, k, 512, 1<<20).Ms()},
		{"fixed", "{type: fixed, prefill_ms: 20, decode_ms: 10}", 10},
		// The polynomial's least decode step (an empty pool).
		{"polynomial", "{type: polynomial}", timing.Polynomial{}.DecodeMs(k+1, 0, 0, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := func(kind, rates string) string {
				s := fmt.Sprintf("{kind: %s, num_speculative_tokens: %d", kind, k)
				if rates != "" {
					s += ", acceptance_rates: " + rates
				}
				return s + "}"
			}
			none := item30_4ITL(t, tc.timing, "")
			eagle0 := item30_4ITL(t, tc.timing, spec("eagle", "[0, 0, 0]"))
			eagleTypical := item30_4ITL(t, tc.timing, spec("eagle", ""))
			eagle100 := item30_4ITL(t, tc.timing, spec("eagle", "[1, 1, 1]"))
			ngram0 := item30_4ITL(t, tc.timing, spec("ngram", "[0, 0, 0]"))
			ngram100 := item30_4ITL(t, tc.timing, spec("ngram", "[1, 1, 1]"))
			// At 100 % the prefill pass emits k+1 tokens (spec §2.7: its
			// drafts are sampled too) and each of the other 127−k tokens'
			// passes emits k+1 and costs at least one verify pass.
			const out = 128
			bound := float64((out-1-k+k)/(k+1)) * tc.verifyMs / (out - 1)
			t.Logf("ITL ms: none %.3f, eagle@0 %.3f, eagle@typical %.3f, eagle@1 %.3f, ngram@0 %.3f, ngram@1 %.3f, verify bound %.3f",
				none, eagle0, eagleTypical, eagle100, ngram0, ngram100, bound)
			if !(eagle0 > none) {
				t.Errorf("EAGLE at 0 %% acceptance: ITL %v, not above no speculation's %v", eagle0, none)
			}
			if !(eagleTypical < none) {
				t.Errorf("EAGLE at the default acceptance: ITL %v, not below no speculation's %v", eagleTypical, none)
			}
			if !(eagle100 >= bound-1e-9 && ngram100 >= bound-1e-9) {
				t.Errorf("at 100 %%: EAGLE ITL %v, ngram %v, below the verify cost per token %v", eagle100, ngram100, bound)
			}
			if !(ngram100 < eagle100 && ngram0 < eagle0) {
				t.Errorf("ngram (verification only) not cheaper than EAGLE: %v vs %v at 100 %%, %v vs %v at 0 %%", ngram100, eagle100, ngram0, eagle0)
			}
			if !(ngram0 >= none) {
				t.Errorf("ngram at 0 %% acceptance: ITL %v below no speculation's %v", ngram0, none)
			}
		})
	}
}
