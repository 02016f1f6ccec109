package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// The report says what was simulated (the timing badge and memory-fit
// lines of the page): each pool's GPU, layout, timing with its validation,
// and how its GPU's memory divides. A fixed pool that cannot fit is an
// error under the roofline timing and a warning under one that ignores the
// hardware.
func TestDeploymentAndMemoryFit(t *testing.T) {
	// A model that does not fit its GPU at all is marked too.
	if _, err := Predict(Inputs{Config: []byte("engine: {model: llama-3.1-70b, hardware: a100_40gb}")}, nil); !errors.Is(err, timing.ErrDoesNotFit) {
		t.Fatalf("70B on one 40 GB GPU: %v", err)
	}
	rep, err := Predict(Inputs{Config: []byte("engine: {workers: {aggregated: {parallelism: {replicas: 2, tensor: 2}}}}\ntraffic: {stop: {requests: 5}}")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Deployment
	if d == nil || d.Model != "llama-3.1-8b" || len(d.Pools) != 1 || rep.Warnings != nil {
		t.Fatalf("deployment %+v, warnings %v", d, rep.Warnings)
	}
	p := d.Pools[0]
	if p.Hardware != "h100_sxm" || p.Tensor != 2 || p.GPUsPerWorker != 2 || p.Timing != "default" || !strings.HasPrefix(p.Validation, "roofline: median error") || !strings.Contains(p.Validation, "Hopper open-loop runs with vllm") ||
		p.Capacity != "default" || !p.Fits || p.FreeBytes < 0 || p.WeightsBytes+p.KVBytes+p.ReserveBytes+p.FreeBytes != p.GPUBytes {
		t.Fatalf("pool %+v", p)
	}
	if rep.SLA != nil {
		t.Fatalf("sla %+v without evaluation.sla", rep.SLA)
	}

	huge := "engine: {workers: {aggregated: {kv_cache: {capacity: {blocks: 100000}}%s}}}\ntraffic: {stop: {requests: 5}}\nevaluation: {sla: {ttft_ms: 500}}"
	_, err = Predict(Inputs{Config: []byte(strings.Replace(huge, "%s", "", 1))}, nil)
	if err == nil || !strings.Contains(err.Error(), "engine.workers.aggregated.kv_cache.capacity: 100000 blocks of 64 tokens take 781.2 GiB per GPU") || !errors.Is(err, timing.ErrDoesNotFit) {
		t.Fatalf("roofline timing with an impossible pool: %v", err)
	}
	rep, err = Predict(Inputs{Config: []byte(strings.Replace(huge, "%s", ", timing: {type: polynomial}", 1))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "the timing ignores the hardware") || rep.Deployment.Pools[0].Fits {
		t.Fatalf("polynomial timing with an impossible pool: warnings %v", rep.Warnings)
	}
	if s := rep.SLA; s == nil || *s.TTFTMs != 500 || s.ITLMs != nil || s.E2EMs != nil {
		t.Fatalf("sla %+v", s)
	}
}
