package config

import (
	"strings"
	"testing"
)

// Issue 30 item 3: dtype × GPU. A weight dtype (engine.dtype) or KV-cache
// dtype (kv_cache.dtype) the GPU has no tensor units for is refused when
// the config is read, naming the dtype's key, the GPU with its key, and the
// dtypes that GPU supports; what the GPU has is accepted. Before, fp4 on an
// H100 was accepted and priced as FP8, fp8 on an A100 as BF16 math.
func TestItem30_3DtypeGPU(t *testing.T) {
	const (
		fp4Units = "fp4 needs FP4 tensor cores (NVIDIA Blackwell or later)"
		fp8Units = "fp8 needs FP8 tensor cores (NVIDIA Ada Lovelace, Hopper or later)"
	)
	for _, tc := range []struct {
		name, text string
		sets       []string
		want       string // "" = accepted
	}{
		{"fp4 on h100 (the default GPU)", "engine: {dtype: fp4}", nil,
			"c.yaml:1: engine.dtype: " + fp4Units + ", which h100_sxm (engine.hardware) does not have; it supports bf16, fp16, fp8"},
		{"fp4 on h200", "engine:\n  hardware: h200_sxm\n  dtype: fp4\n", nil,
			"c.yaml:3: engine.dtype: " + fp4Units + ", which h200_sxm (engine.hardware) does not have; it supports bf16, fp16, fp8"},
		{"fp4 on l40s (Ada)", "engine: {hardware: l40s, dtype: fp4}", nil, "which l40s (engine.hardware) does not have; it supports bf16, fp16, fp8"},
		{"fp8 on a100 80GB", "engine: {hardware: a100_80gb, dtype: fp8}", nil,
			"c.yaml:1: engine.dtype: " + fp8Units + ", which a100_80gb (engine.hardware) does not have; it supports bf16, fp16"},
		{"fp4 on a100 40GB", "engine: {hardware: a100_40gb, dtype: fp4}", nil,
			"engine.dtype: " + fp4Units + ", which a100_40gb (engine.hardware) does not have; it supports bf16, fp16"},
		{"kv fp8 on a100", "engine: {hardware: a100_80gb, workers: {aggregated: {kv_cache: {dtype: fp8}}}}", nil,
			"c.yaml:1: engine.workers.aggregated.kv_cache.dtype: " + fp8Units + ", which a100_80gb (engine.hardware) does not have; it supports bf16, fp16"},
		{"fp4 from --set", "", []string{"engine.dtype=fp4"}, "--set engine.dtype: " + fp4Units + ", which h100_sxm (engine.hardware)"},
		{"disaggregated: the prefill role's own GPU", "engine: {mode: disaggregated, hardware: b200, dtype: fp4, workers: {prefill: {hardware: h100_sxm}}}", nil,
			"engine.dtype: " + fp4Units + ", which h100_sxm (engine.workers.prefill.hardware) does not have; it supports bf16, fp16, fp8"},
		{"disaggregated: kv fp8 on the decode role's a100", "engine: {mode: disaggregated, workers: {decode: {hardware: a100_40gb, kv_cache: {dtype: fp8}}}}", nil,
			"engine.workers.decode.kv_cache.dtype: " + fp8Units + ", which a100_40gb (engine.workers.decode.hardware) does not have; it supports bf16, fp16"},
		{"fp8 on h100", "engine: {dtype: fp8}", nil, ""},
		{"fp8 weights and kv on h200", "engine: {hardware: h200_sxm, dtype: fp8, workers: {aggregated: {kv_cache: {dtype: fp8}}}}", nil, ""},
		{"fp8 on l40s (Ada)", "engine: {hardware: l40s, dtype: fp8}", nil, ""},
		{"fp8 on rtx_4090 (Ada)", "engine: {hardware: rtx_4090, dtype: fp8}", nil, ""},
		{"fp4 on b200", "engine: {hardware: b200, dtype: fp4, workers: {aggregated: {kv_cache: {dtype: fp8}}}}", nil, ""},
		{"fp4 on rtx_pro_6000 (Blackwell)", "engine: {hardware: rtx_pro_6000, dtype: fp4}", nil, ""},
		{"bf16, fp16 and auto on a100", "engine: {hardware: a100_80gb, dtype: bf16, workers: {aggregated: {kv_cache: {dtype: fp16}}}}", nil, ""},
		{"auto on a100", "engine: {hardware: a100_40gb, dtype: auto}", nil, ""},
		{"disaggregated: fp4 on b200 for both roles", "engine: {mode: disaggregated, hardware: b200, dtype: fp4, workers: {decode: {hardware: B200}}}", nil, ""},
		// An unknown GPU is not this check's to refuse: the run refuses it by
		// name when it is built (core/sim).
		{"unknown hardware is left to the run", "engine: {hardware: nope, dtype: fp4}", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.text), tc.sets)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want the config accepted", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
