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
	pt := func(model, gpu, engine string, ttft, tpot float64) Result {
		return Result{Point: Point{Model: model, GPU: gpu, Backend: engine, OSL: 11, TTFTMs: 100, TPOTMs: 10}, PredTTFTMs: 100 * (1 + ttft), PredTPOTMs: 10 * (1 + tpot)}
	}
	rs := []Result{
		pt("llama-3.1-70b", "h100_sxm", "vllm", 0.10, -0.10), // fitted
		pt("llama-3.1-8b", "h200_sxm", "vllm", -0.20, 0.05),  // held out
		pt("qwen3-32b", "h100_sxm", "sglang", 0.40, 0.30),    // held out
		pt("llama-3.1-70b", "b200", "trtllm", -0.50, 0.02),   // fitted
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
		if got, want := keys(s), []string{"by_gpu", "gate", "gated", "held_out", "median_abs_error", "name", "p90_abs_error", "points"}; !slices.Equal(got, want) {
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
		// AIC: |TTFT| 10, 20, 40, 50; |TPOT| 10, 5, 30, 2; the failed point is not scored.
		{"aic all", v.Sources[0].Errors, 4, 5, 20, -1, 50},
		{"aic held out", v.Sources[0].HeldOut.Errors, 2, 5, 20, -1, 40},
		{"aic Hopper", v.Sources[0].ByGPU["Hopper"].Errors, 3, 10, 20, -1, 40},
		{"aic Hopper vllm", v.Sources[0].ByGPU["Hopper"].ByEngine["vllm"], 2, 5, 10, -1, 20},
		{"aic Blackwell trtllm held out (none)", v.Sources[0].HeldOut.ByGPU["Blackwell"].ByEngine["trtllm"], 0, math.NaN(), math.NaN(), math.NaN(), math.NaN()},
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
	// AIC's E2E is derived from its TTFT and TPOT (fixed OSL 11):
	// (110 + 10·9) / (100 + 10·10) − 1 = 0 for the first point.
	if e := v.Sources[0].ByGPU["Hopper"].ByEngine["vllm"]; e.P90AbsError.E2E == nil {
		t.Error("AIC E2E is null")
	}
	if !v.Sources[0].Gated || !v.Sources[1].Gated || v.Sources[0].Name != "AIConfigurator silicon_sample" {
		t.Errorf("sources %q gated %v, %q gated %v", v.Sources[0].Name, v.Sources[0].Gated, v.Sources[1].Name, v.Sources[1].Gated)
	}
	// Held out: AIC's vllm +5 % and sglang +30 % TPOT; BLIS's one vllm run −10 %.
	for _, c := range []struct {
		src    int
		engine string
		want   float64
	}{{0, "vllm", 5}, {0, "sglang", 30}, {1, "vllm", -10}} {
		if got, ok := v.Sources[c.src].HeldOut.SignedTPOTByEngine[c.engine]; !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("source %d held-out signed TPOT %s: %v, want %v", c.src, c.engine, got, c.want)
		}
	}
	doc := Markdown(rs, bl, srcs)
	if err := CompareDoc(js, doc); err != nil {
		t.Error(err)
	}
	// A doc whose figure differs is caught.
	bad := strings.Replace(doc, "| all | **all** | **all** | 4 | 5.0% |", "| all | **all** | **all** | 4 | 5.1% |", 1)
	if bad == doc {
		t.Fatal("the doc has no AIC total row to corrupt")
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
