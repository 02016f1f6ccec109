package validation

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestItem33_2ValidateJSON: the JSON has exactly the field names the issue
// names, its figures are the per-source medians and p90s, the held-out
// part is reported separately, and docs/validation.md's "By source"
// tables show the same figures (CompareDoc).
func TestItem33_2ValidateJSON(t *testing.T) {
	pt := func(model, gpu, engine, dtype string, ttft, tpot float64) Result {
		p := Point{Model: model, GPU: gpu, Backend: engine, DType: dtype, OSL: 11, TTFTMs: 100, TPOTMs: 10}
		if model == "llama-3.1-70b" {
			p.Provenance = "source_file=2026-04-06.csv; model=Llama-3.1-70B; measured=2025-10-29" // InferenceMAX's
		}
		return Result{Point: p, PredTTFTMs: 100 * (1 + ttft), PredTPOTMs: 10 * (1 + tpot)}
	}
	rs := []Result{
		pt("llama-3.1-70b", "h100_sxm", "vllm", "fp8", 0.10, -0.10), // InferenceMAX, fitted
		pt("llama-3.1-8b", "h200_sxm", "vllm", "bf16", -0.20, 0.05), // aiperf recipe
		pt("qwen3-32b", "h100_sxm", "sglang", "bf16", 0.40, 0.30),   // aiperf recipe
		pt("llama-3.1-70b", "b200", "trtllm", "fp4", -0.50, 0.02),   // InferenceMAX, held out
		{Point: Point{Model: "qwen3-32b", GPU: "b200", Backend: "vllm", OSL: 11, TTFTMs: 1, TPOTMs: 1}, Err: errors.New("failed: not scored")},
	}
	bl := []BLISResult{
		{Run: BLISRun{Model: "meta-llama/Llama-2-7b-hf"}, Measured: &blisRow{TTFT: 50, ITL: 10, E2E: 1000}, Pred: means{55, 9, 1100}},
		{Run: BLISRun{Model: "meta-llama/Llama-3.1-70B-Instruct"}, Measured: &blisRow{TTFT: 50, ITL: 10, E2E: 1000}, Pred: means{40, 10.2, 990}},
		{Run: BLISRun{Model: "meta-llama/Llama-2-7b-hf"}, Pred: means{1, 1, 1}}, // no public measurement
	}
	srcs := sources(rs, bl)
	js, err := JSON(srcs)
	if err != nil {
		t.Fatal(err)
	}
	// Exact field names, read as an outside test would.
	var raw struct {
		Sources []map[string]any `json:"sources"`
	}
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		ks := sortedKeys(m)
		return ks
	}
	for _, s := range raw.Sources {
		want := []string{"by_gpu", "gate", "gated", "held_out", "median_abs_error", "name", "p90_abs_error", "points"}
		if s["gated"] == false { // a reported source names no gate
			want = slices.DeleteFunc(want, func(k string) bool { return k == "gate" })
		}
		if got := keys(s); !slices.Equal(got, want) {
			t.Errorf("source keys %v, want %v", got, want)
		}
		for _, k := range []string{"median_abs_error", "p90_abs_error"} {
			if got := keys(s[k].(map[string]any)); !slices.Equal(got, []string{"e2e", "tpot", "ttft"}) {
				t.Errorf("%s keys %v", k, got)
			}
		}
		for fam, g := range s["by_gpu"].(map[string]any) {
			if got := keys(g.(map[string]any)); !slices.Equal(got, []string{"by_engine", "median_abs_error", "p90_abs_error", "points"}) {
				t.Errorf("by_gpu[%s] keys %v", fam, got)
			}
		}
		if got := keys(s["held_out"].(map[string]any)); !slices.Equal(got, []string{"by_gpu", "median_abs_error", "p90_abs_error", "points", "signed_tpot_by_engine", "split"}) {
			t.Errorf("held_out keys %v", got)
		}
	}
	var v ValidationJSON
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	near := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	for _, c := range []struct {
		what                string
		e                   Errors
		points              int
		tpot, ttft, e2e, p9 float64 // p9: TTFT p90
	}{
		// InferenceMAX: |TTFT| 10, 50; |TPOT| 10, 2 (medians and p90s are
		// nearest-rank: the lower and the upper of two).
		{"imax all", v.Sources[0].Errors, 2, 2, 10, -1, 50},
		{"imax held out", v.Sources[0].HeldOut.Errors, 1, 2, 50, -1, 50},
		{"imax Hopper", v.Sources[0].ByGPU["Hopper"].Errors, 1, 10, 10, -1, 10},
		{"imax Hopper vllm held out (none)", v.Sources[0].HeldOut.ByGPU["Hopper"].ByEngine["vllm"], 0, math.NaN(), math.NaN(), math.NaN(), math.NaN()},
		// aiperf recipe: |TTFT| 20, 40; |TPOT| 5, 30; the failed point is not scored.
		{"aiperf all", v.Sources[2].Errors, 2, 5, 20, -1, 40},
		{"aiperf held out (every point)", v.Sources[2].HeldOut.Errors, 2, 5, 20, -1, 40},
		{"aiperf Hopper sglang", v.Sources[2].ByGPU["Hopper"].ByEngine["sglang"], 1, 30, 40, -1, 40},
		// BLIS: the unmeasured run is not scored.
		{"blis all", v.Sources[1].Errors, 2, 2, 10, 1, 20},
		{"blis held out", v.Sources[1].HeldOut.Errors, 1, 10, 10, 10, 10},
	} {
		if c.e.Points != c.points {
			t.Errorf("%s: %d points, want %d", c.what, c.e.Points, c.points)
		}
		if c.points == 0 {
			continue
		}
		near(c.what+" median TPOT", c.e.MedianAbsError.TPOT, c.tpot)
		near(c.what+" median TTFT", c.e.MedianAbsError.TTFT, c.ttft)
		near(c.what+" p90 TTFT", c.e.P90AbsError.TTFT, c.p9)
		if c.e2e >= 0 {
			near(c.what+" median E2E", c.e.MedianAbsError.E2E, c.e2e)
		}
	}
	// The rows' E2E is derived from their TTFT and TPOT (OSL 11; for
	// InferenceMAX's the middle of its length range).
	if e := v.Sources[2].ByGPU["Hopper"].ByEngine["sglang"]; e.P90AbsError.E2E == nil {
		t.Error("AIConfigurator E2E is null")
	}
	for i, want := range []struct {
		name  string
		gated bool
	}{{IMAXSource, true}, {"BLIS H100 runs", true}, {AIPerfSource, false}} {
		if len(v.Sources) != 3 || v.Sources[i].Name != want.name || v.Sources[i].Gated != want.gated {
			t.Fatalf("source %d: %q gated %v, want %q gated %v", i, v.Sources[i].Name, v.Sources[i].Gated, want.name, want.gated)
		}
	}
	// Held out: InferenceMAX's trtllm +2 %, the aiperf rows' vllm +5 % and
	// sglang +30 % TPOT; BLIS's one vllm run −10 %.
	for _, c := range []struct {
		src    int
		engine string
		want   float64
	}{{0, "trtllm", 2}, {2, "vllm", 5}, {2, "sglang", 30}, {1, "vllm", -10}} {
		if got, ok := v.Sources[c.src].HeldOut.SignedTPOTByEngine[c.engine]; !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("source %d held-out signed TPOT %s: %v, want %v", c.src, c.engine, got, c.want)
		}
	}
	doc := Markdown(rs, bl, srcs)
	if err := CompareDoc(js, doc); err != nil {
		t.Error(err)
	}
	// A doc whose figure differs is caught.
	bad := strings.Replace(doc, "| all | **all** | **all** | 2 | 2.0% |", "| all | **all** | **all** | 2 | 2.1% |", 1)
	if bad == doc {
		t.Fatal("the doc has no InferenceMAX total row to corrupt")
	}
	if err := CompareDoc(js, bad); err == nil {
		t.Error("a changed figure went unnoticed")
	}
	if bad := strings.Replace(doc, "sglang +30.0%", "sglang +31.0%", 1); bad == doc {
		t.Error("the doc has no held-out signed TPOT line")
	} else if err := CompareDoc(js, bad); err == nil {
		t.Error("a changed signed offset went unnoticed")
	}
}
