package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// item30_2Config: Llama-3.1-70B on H200 at tensor 2, the pipeline depth
// and timing type filled in.
const item30_2Config = `
traffic: {source: {type: synthetic, input_tokens: 512, output_tokens: 16}, stop: {requests: 8}}
engine:
  model: llama-3.1-70b
  hardware: h200_sxm
  workers:
    aggregated:
      parallelism: {tensor: 2, pipeline: %d}
      kv_cache: {block_size: 64, capacity: {type: default}}
      timing: {type: %s}
`

// Issue 30 item 2: parallelism.pipeline reaches the roofline and the pool
// sizing from the YAML: per GPU the weights halve at pipeline 2 and the
// pool grows (6,006 blocks at pipeline 1; timing/item30_2_test.go has the
// worker's 18,740 before the virtual engines split it).
func TestItem30_2ConfigFlows(t *testing.T) {
	deploy := func(pp int) (blocks int, weights float64, gpus int) {
		t.Helper()
		rep, err := Predict(Inputs{Config: []byte(fmt.Sprintf(item30_2Config, pp, "default"))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Deployment.Pools[0]
		return p.KVBlocks, p.WeightsBytes, p.GPUsPerWorker
	}
	b1, w1, g1 := deploy(1)
	b2, w2, g2 := deploy(2)
	if b1 != 6006 || b2 <= b1 || w2 > 0.51*w1 || g1 != 2 || g2 != 4 {
		t.Errorf("pipeline 1: %d blocks, %.1f GiB, %d GPUs; pipeline 2: %d blocks, %.1f GiB, %d GPUs", b1, w1/(1<<30), g1, b2, w2/(1<<30), g2)
	}
}

// Issue 30 item 2: timings that cannot express pipeline stages refuse a
// pipeline, naming the key and the timing; a pipeline deeper than the
// model's 80 layers is refused naming the key and the layer count.
func TestItem30_2Refused(t *testing.T) {
	profile, err := os.ReadFile("../../timing/testdata/perf_data.npz")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		in   Inputs
		want []string
	}{
		{"--profile", Inputs{Config: []byte(fmt.Sprintf(item30_2Config, 2, "default")), Profile: profile, ProfileName: "perf_data.npz"},
			[]string{"engine.workers.aggregated.parallelism.pipeline: 2", "profile"}},
		{"timing.type profile", Inputs{Config: []byte(fmt.Sprintf(item30_2Config, 2, "profile")), Profile: nil},
			[]string{"engine.workers.aggregated.parallelism.pipeline: 2", "timing.type profile"}},
		{"polynomial", Inputs{Config: []byte(fmt.Sprintf(item30_2Config, 2, "polynomial"))},
			[]string{"engine.workers.aggregated.parallelism.pipeline: 2", "timing.type polynomial"}},
		{"deeper than the layers", Inputs{Config: []byte(fmt.Sprintf(item30_2Config, 81, "default"))},
			[]string{"engine.workers.aggregated.parallelism.pipeline: 81", "80 decoder layers"}},
	} {
		_, err := Predict(c.in, nil)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to name %q", c.name, err, w)
			}
		}
	}
	// Fixed timing's pass times are taken as one traversal: allowed.
	if _, err := Predict(Inputs{Config: []byte(strings.Replace(fmt.Sprintf(item30_2Config, 2, "fixed"), "{type: fixed}", "{type: fixed, prefill_ms: 100, decode_ms: 10}", 1))}, nil); err != nil {
		t.Errorf("fixed timing with pipeline 2: %v", err)
	}
}
