package validation

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestItem33_3ValidateKernels: `dynosim validate --kernels` reaches the
// replays (one AIConfigurator point's predicted TPOT moves off the
// curves' under aic, and the default timing prices it as aic does: AIC
// measured its GPU and engine), the JSON and the text name the choice, and
// an unknown value is refused.
func TestItem33_3ValidateKernels(t *testing.T) {
	defer func() { kernelsMode = "default" }()
	pts, err := AICPoints()
	if err != nil {
		t.Fatal(err)
	}
	var p Point
	for _, q := range pts {
		if q.GPU == "h100_sxm" && q.Backend == "vllm" && q.TP == 2 && q.Concurrency <= 8 {
			p = q
			break
		}
	}
	if p.ID == "" {
		t.Fatal("no small H100 vLLM TP2 point")
	}
	tpot := map[string]float64{}
	for _, tc := range []struct{ kernels, json, text string }{
		{"default", `"kernels": "default"`, ""},
		{"curves", `"kernels": "curves"`, "`timing.kernels: curves`"},
		{"aic", `"kernels": "aic"`, "`timing.kernels: aic`"},
	} {
		if err := SetKernels(tc.kernels); err != nil {
			t.Fatal(err)
		}
		r := Run(p)
		if r.Err != nil {
			t.Fatalf("%s: %v", tc.kernels, r.Err)
		}
		tpot[tc.kernels] = r.PredTPOTMs
		js, err := JSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var v ValidationJSON
		if err := json.Unmarshal(js, &v); err != nil || v.Kernels != tc.kernels || !strings.Contains(string(js), tc.json) {
			t.Errorf("--kernels %s: JSON %s (%v)", tc.kernels, js, err)
		}
		if doc := Markdown(nil, nil, nil); tc.text != "" && !strings.Contains(doc, tc.text) || tc.text == "" && strings.Contains(doc, "timing.kernels") {
			t.Errorf("--kernels %s: the text does not say so", tc.kernels)
		}
	}
	// A GPU AIC did not measure is refused under aic, never priced on the
	// curves beneath a report that says aic.
	q := p
	q.GPU = "rtx_4090"
	if r := Run(q); r.Err == nil || !strings.Contains(r.Err.Error(), "timing.kernels") {
		t.Errorf("rtx_4090 under aic: %v, want a refusal naming timing.kernels", r.Err)
	}
	if tpot["curves"] == tpot["aic"] || tpot["default"] != tpot["aic"] {
		t.Errorf("%s: TPOT %.4f ms (default), %.4f (curves), %.4f (aic): want the default aic's, apart from the curves'", p.ID, tpot["default"], tpot["curves"], tpot["aic"])
	}
	t.Logf("%s: TPOT %.4f ms (curves) vs %.4f ms (aic)", p.ID, tpot["curves"], tpot["aic"])
	for _, bad := range []string{"", "AIC", "tables"} {
		if err := SetKernels(bad); err == nil || !strings.Contains(err.Error(), "default, curves or aic") {
			t.Errorf("SetKernels(%q) = %v, want a refusal", bad, err)
		}
	}
	if kernelsMode != "aic" {
		t.Errorf("a refused value changed the mode to %q", kernelsMode)
	}
}
