package timing

import (
	"reflect"
	"strings"
	"testing"
)

// Issue 30 item 2: pipeline parallelism's timing and memory half.

// TestItem30_2PipelineLayers: vLLM's get_pp_indices split
// (vllm/distributed/utils.py; its tests/distributed/test_pipeline_partition.py
// and the vLLM docs' 61-layer example).
func TestItem30_2PipelineLayers(t *testing.T) {
	for _, c := range []struct {
		layers, pp int
		want       []int
	}{
		{80, 1, []int{80}},
		{80, 2, []int{40, 40}},
		{32, 4, []int{8, 8, 8, 8}},
		{61, 2, []int{31, 30}},
		{61, 4, []int{15, 15, 16, 15}},
		{22, 4, []int{5, 6, 6, 5}},
		{5, 3, []int{2, 2, 1}},
		{4, 3, []int{1, 2, 1}},
		{3, 2, []int{2, 1}},
	} {
		if got := PipelineLayers(c.layers, c.pp); !reflect.DeepEqual(got, c.want) {
			t.Errorf("PipelineLayers(%d, %d) = %v, want %v", c.layers, c.pp, got, c.want)
		}
	}
}

// TestItem30_2Capacity: Llama-3.1-70B on H200, tensor 2: a second stage
// halves the weights and the KV bytes per token of each GPU, so each GPU
// holds 18,740 blocks of 64 tokens (of all 80 layers) instead of 6,006:
// 0.9 × 140.4 GiB − 65.7 GiB of weights − 2 GiB reserve over 10 MiB a
// block, against − 32.9 GiB over 5 MiB.
func TestItem30_2Capacity(t *testing.T) {
	for _, c := range []struct {
		name       string
		par        Parallelism
		blocks     int
		weightsGiB float64
		kvPerToken int64
		gpus       int
	}{
		{"tp2 pp1", Parallelism{Tensor: 2}, 6006, 65.707, 163840, 2},
		{"tp2 pp2", Parallelism{Tensor: 2, Pipeline: 2}, 18740, 32.854, 81920, 4},
		{"tp2 pp4", Parallelism{Tensor: 2, Pipeline: 4}, 44009, 16.916, 40960, 8},
	} {
		r, err := NewRoofline(RooflineSpec{Model: "llama-3.1-70b", Hardware: "h200_sxm", Parallelism: c.par})
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := r.EstimateBlocks(0.9, 64, 0)
		if err != nil || blocks != c.blocks {
			t.Errorf("%s: EstimateBlocks = %d, %v; want %d", c.name, blocks, err, c.blocks)
		}
		fit := r.Memory(blocks, 64)
		if got := fit.WeightsBytes / (1 << 30); got < c.weightsGiB-0.001 || got > c.weightsGiB+0.001 {
			t.Errorf("%s: weights %.3f GiB/GPU, want %.3f", c.name, got, c.weightsGiB)
		}
		if got := r.KVBytesPerToken(); got != c.kvPerToken {
			t.Errorf("%s: KV bytes per token per GPU %d, want %d", c.name, got, c.kvPerToken)
		}
		if !fit.Fits() {
			t.Errorf("%s: its own estimate does not fit: %+v", c.name, fit)
		}
		if got := r.Par.GPUs(); got != c.gpus {
			t.Errorf("%s: GPUs %d, want %d", c.name, got, c.gpus)
		}
	}
}

// TestItem30_2StageWeights: uneven splits and the embedding/lm_head
// stages; the heaviest stage binds. DeepSeek-V3's 3 dense layers fall in
// the first stage.
func TestItem30_2StageWeights(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b") // 32 layers, untied: embedding and lm_head apart
	p1, _ := Parallelism{}.Normalize()
	p2, _ := Parallelism{Pipeline: 2}.Normalize()
	ss := stages(m, p2)
	if len(ss) != 2 || ss[0].layers != 16 || !ss[0].first || ss[0].last || !ss[1].last {
		t.Fatalf("stages = %+v", ss)
	}
	whole, half := WeightBytesPerGPU(m, p1), WeightBytesPerGPU(m, p2)
	if d := 2*half - whole; d < -1 || d > 1 {
		t.Errorf("8B: 2 × %.0f (heaviest stage) ≠ %.0f (whole model) with even stages", half, whole)
	}
	ds := mustModel(t, "deepseek-v3")
	p4, _ := Parallelism{Tensor: 8, Pipeline: 4}.Normalize()
	var dense, moe int
	for i, s := range stages(ds, p4) {
		dense += s.layers - s.moeLayers
		moe += s.moeLayers
		if i == 0 && s.layers-s.moeLayers != ds.DenseLayers {
			t.Errorf("deepseek-v3 stage 0: %d dense layers, want %d", s.layers-s.moeLayers, ds.DenseLayers)
		}
	}
	if dense != ds.DenseLayers || moe != ds.moeLayers() {
		t.Errorf("deepseek-v3 over 4 stages: %d dense + %d MoE layers, want %d + %d", dense, moe, ds.DenseLayers, ds.moeLayers())
	}
}

// TestItem30_2Traversal: one pass of one virtual engine through both
// stages costs the pipeline-1 pass plus one activation transfer (small:
// 0.03 ms at 64 decode tokens, 0.86 ms at an 8,192-token prefill on
// NVLink 4).
func TestItem30_2Traversal(t *testing.T) {
	build := func(pp int) *Roofline {
		r, err := NewRoofline(RooflineSpec{Model: "llama-3.1-70b", Hardware: "h200_sxm", Parallelism: Parallelism{Tensor: 2, Pipeline: pp}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2 := build(1), build(2)
	for _, c := range []struct {
		name   string
		tokens float64
		price  func(r *Roofline) float64
	}{
		{"decode 1", 1, func(r *Roofline) float64 { return r.DecodeMs(1, 1024, 1024, 0) }},
		{"decode 64", 64, func(r *Roofline) float64 { return r.DecodeMs(64, 64*1024, 1024, 0) }},
		{"prefill 2048", 2048, func(r *Roofline) float64 { return r.PrefillMs(1, 2048, 0) }},
		{"prefill 8192", 8192, func(r *Roofline) float64 { return r.PrefillMs(1, 8192, 0) }},
		{"mixed 2048+64", 2048 + 64, func(r *Roofline) float64 { return r.MixedMs(1, 2048, 0, 64, 64*1024, 1024, 0) }},
		{"verify 3 drafts × 16", 64, func(r *Roofline) float64 {
			return Scale{Speedup: 1, DecodeSpeedup: 1}.Verify(r, 16, 3, 16*1024, 0).Ms()
		}},
	} {
		a, b := c.price(r1), c.price(r2)
		x := r2.pipelineTransferMs(c.tokens)
		if !(x > 0) || b < a {
			t.Errorf("%s: pp1 %.4f ms, pp2 %.4f ms, transfer %.4f ms", c.name, a, b, x)
		}
		tol := 1e-9
		if strings.HasPrefix(c.name, "verify") {
			tol = 2e-6 // Scale quantizes to whole nanoseconds
		}
		if b-a-x > tol || a+x-b > tol {
			t.Errorf("%s: pp2 %.4f ms ≠ pp1 %.4f + transfer %.4f", c.name, b, a, x)
		}
		if x > 0.01*a {
			t.Errorf("%s: the transfer %.4f ms is over 1%% of the pass %.4f ms", c.name, x, a)
		}
		t.Logf("%s: pp1 %.4f ms, pp2 %.4f ms (+%.4f)", c.name, a, b, b-a)
	}
}

// TestItem30_2Refused: a pipeline deeper than the model's layers.
func TestItem30_2Refused(t *testing.T) {
	_, err := NewRoofline(RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", Parallelism: Parallelism{Pipeline: 33}})
	if err == nil || !strings.Contains(err.Error(), "parallelism.pipeline: 33") || !strings.Contains(err.Error(), "32 decoder layers") {
		t.Errorf("pipeline 33 on 32 layers: %v", err)
	}
	_, err = EstimateBlocks(mustGPU(t, "h100_sxm"), mustModel(t, "llama-3.1-8b"), Parallelism{Pipeline: 40}, 0.9, 64, 0)
	if err == nil || !strings.Contains(err.Error(), "parallelism.pipeline: 40") {
		t.Errorf("EstimateBlocks pipeline 40 on 32 layers: %v", err)
	}
	if _, err := NewRoofline(RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", Parallelism: Parallelism{Pipeline: 32}}); err != nil {
		t.Errorf("pipeline 32 on 32 layers: %v", err)
	}
}
