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

// TestItem33_3KernelsKnob: `timing.kernels: aic` prices the run from the
// measured tables and says so in the deployment (timing_kernels); the
// curves (the default, or `kernels: curves`) leave the report as before;
// a front end without tables, a GPU without measurements or a timing type
// the tables do not price are refused naming the key.
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
		b, _ := json.Marshal(rep)
		return &rep.Deployment.Pools[0], b, nil
	}
	_, base, err := run(kernelsConfig("h100_sxm", "{type: default}"), false)
	if err != nil {
		t.Fatal(err)
	}
	_, curves, err := run(kernelsConfig("h100_sxm", "{type: default, kernels: curves}"), true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(base, curves) {
		t.Errorf("kernels: curves changed the report")
	}
	pool, aic, err := run(kernelsConfig("h100_sxm", "{type: default, kernels: aic}"), true)
	if err != nil {
		t.Fatal(err)
	}
	if pool.TimingKernels != "aic vllm 0.24.0 h100_sxm" {
		t.Errorf("timing_kernels %q", pool.TimingKernels)
	}
	if !strings.HasSuffix(pool.Validation, " (measured with kernels: curves)") {
		t.Errorf("validation %q does not say it was measured on the curves", pool.Validation)
	}
	if bytes.Equal(base, aic) {
		t.Errorf("kernels: aic priced nothing differently")
	}
	for _, tc := range []struct {
		cfg        string
		withTables bool
		want       string
	}{
		{kernelsConfig("h100_sxm", "{type: default, kernels: aic}"), false, "timing.kernels: aic: no kernel tables were given"},
		{kernelsConfig("rtx_4090", "{type: default, kernels: aic}"), true, "timing.kernels: aic: AIConfigurator measured no kernels of rtx_4090 under vllm"},
		{kernelsConfig("h100_sxm", "{type: polynomial, kernels: aic}"), true, "timing.kernels: aic prices timing type default, not polynomial"},
		{kernelsConfig("h100_sxm", "{type: default, kernels: measured}"), true, `timing.kernels: must be one of curves, aic, got "measured"`},
	} {
		if _, _, err := run(tc.cfg, tc.withTables); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.want, err, tc.want)
		}
	}
}
