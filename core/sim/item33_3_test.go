package sim_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

// kernelsConfig is a small roofline run; %s is the timing section.
func kernelsConfig(hardware, timing string) string {
	return `
traffic:
  source: {type: synthetic, input_tokens: 1024, output_tokens: 32}
  load: {type: concurrency, concurrency: 8}
  stop: {requests: 24}
engine:
  model: llama-3.1-8b
  hardware: ` + hardware + `
  workers:
    aggregated: {timing: ` + timing + `}
`
}

// TestItem33_3KernelsKnob: the default timing prices a run from the
// measured tables of its GPU and engine where AIC published them, exactly
// as `timing.kernels: aic` does, and from the fitted curves elsewhere
// (`kernels: curves`, a GPU AIC did not measure, a caller that gives no
// tables), saying which in the deployment (timing_kernels) and, on the
// curves, that the validation figures were the tables'; `kernels: aic`
// where there is no table, or under a timing type the tables do not
// price, is refused naming the key.
func TestItem33_3KernelsKnob(t *testing.T) {
	run := func(cfg string, withTables bool) (*schema.PoolDeployment, []byte, error) {
		in := sim.Inputs{Config: []byte(cfg), ConfigName: "k.yaml"}
		if withTables {
			in.KernelTable = kerneldata.Load
		}
		rep, err := sim.Predict(in, nil)
		if err != nil {
			return nil, nil, err
		}
		// The label aside, two runs priced alike give the same report.
		pool := rep.Deployment.Pools[0]
		rep.Deployment.Pools[0].TimingKernels, rep.Deployment.Pools[0].Validation = "", ""
		b, _ := json.Marshal(rep)
		return &pool, b, nil
	}
	const onCurves = " (measured with AIConfigurator's kernel tables; this run is priced on the fitted curves)"
	type priced struct {
		pool   *schema.PoolDeployment
		report []byte
	}
	runs := map[string]priced{}
	for _, tc := range []struct {
		name, hardware, timing string
		withTables             bool
		kernels                string // want timing_kernels
		curves                 bool   // want the validation's curves note
	}{
		{"default", "h100_sxm", "{type: default}", true, "aic vllm 0.24.0 h100_sxm", false},
		{"aic", "h100_sxm", "{type: default, kernels: aic}", true, "aic vllm 0.24.0 h100_sxm", false},
		{"curves", "h100_sxm", "{type: default, kernels: curves}", true, "curves", true},
		{"default without tables", "h100_sxm", "{type: default}", false, "curves (no kernel tables were given to this run)", true},
		// No public source validates an RTX 4090: the badge says "not
		// validated", with no figures to attribute to the tables.
		{"default unmeasured", "rtx_4090", "{type: default}", true, "curves (AIConfigurator measured no kernels of rtx_4090 under vllm)", false},
		{"curves unmeasured", "rtx_4090", "{type: default, kernels: curves}", true, "curves", false},
		{"polynomial", "h100_sxm", "{type: polynomial}", true, "", false},
	} {
		pool, b, err := run(kernelsConfig(tc.hardware, tc.timing), tc.withTables)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if pool.TimingKernels != tc.kernels {
			t.Errorf("%s: timing_kernels %q, want %q", tc.name, pool.TimingKernels, tc.kernels)
		}
		if got := strings.HasSuffix(pool.Validation, onCurves); got != tc.curves {
			t.Errorf("%s: validation %q: curves note %v, want %v", tc.name, pool.Validation, got, tc.curves)
		}
		runs[tc.name] = priced{pool, b}
	}
	for _, same := range [][2]string{{"default", "aic"}, {"curves", "default without tables"}, {"default unmeasured", "curves unmeasured"}} {
		if !bytes.Equal(runs[same[0]].report, runs[same[1]].report) {
			t.Errorf("%s and %s priced differently", same[0], same[1])
		}
	}
	if bytes.Equal(runs["default"].report, runs["curves"].report) {
		t.Errorf("the default priced nothing differently from the curves")
	}
	for _, tc := range []struct {
		cfg        string
		withTables bool
		want       string
	}{
		{kernelsConfig("h100_sxm", "{type: default, kernels: aic}"), false, "timing.kernels: aic: no kernel tables were given"},
		{kernelsConfig("rtx_4090", "{type: default, kernels: aic}"), true, "timing.kernels: aic: AIConfigurator measured no kernels of rtx_4090 under vllm"},
		{kernelsConfig("h100_sxm", "{type: polynomial, kernels: aic}"), true, "timing.kernels: aic prices timing type default, not polynomial"},
		{kernelsConfig("h100_sxm", "{type: fixed, prefill_ms: 1, decode_ms: 1, kernels: curves}"), true, "timing.kernels: curves prices timing type default, not fixed"},
		{kernelsConfig("h100_sxm", "{type: default, kernels: measured}"), true, `timing.kernels: must be one of curves, aic, got "measured"`},
	} {
		if _, _, err := run(tc.cfg, tc.withTables); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.want, err, tc.want)
		}
	}
}
