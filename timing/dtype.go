package timing

import (
	"fmt"
	"strings"
)

// Which number formats a GPU has tensor units for. The catalog records it
// as the GPU's dense rates (catalog.go): FP8FLOPS > 0 means FP8 tensor
// cores, FP4FLOPS > 0 FP4 (NVFP4/MXFP4) tensor cores, and every GPU of the
// catalog (Ampere or later) has BF16 and FP16 ones. A GPUSpec built in code
// rather than looked up declares its formats the same way, and is checked
// the same way. The generations, from NVIDIA's architecture whitepapers:
//   - Ampere (A100, GA100 whitepaper): 3rd-generation tensor cores run
//     FP16, BF16, TF32, INT8 and INT4; no FP8, no FP4.
//   - Ada Lovelace (L40S, RTX 4090; Ada whitepaper) and Hopper (H100,
//     H200; Hopper whitepaper, the Transformer Engine): 4th-generation
//     tensor cores add FP8 (E4M3, E5M2); no FP4.
//   - Blackwell (B200, RTX PRO 6000 Blackwell; Blackwell whitepaper):
//     5th-generation tensor cores add FP4 (NVFP4, MXFP4) and FP6.
//
// vLLM can still load an FP8 or NVFP4 checkpoint on a GPU without those
// units through its Marlin weight-only kernels (narrow weights, BF16
// math), and store an FP8 KV cache by converting in software; the
// simulator prices neither path as such, so it refuses the dtype instead of
// pricing it as a format the GPU does not have (issue 30 item 3: FP4 on
// H100 used to be priced as FP8).

// canonDType maps the spellings NewRooflineFrom accepts to bf16, fp16,
// fp8 or fp4; anything else (auto, "", int8, an unknown name) is returned
// as it is, lower-cased.
func canonDType(d string) string {
	switch d = strings.ToLower(d); d {
	case "bfloat16":
		return "bf16"
	case "float16":
		return "fp16"
	case "float8", "float8_e4m3fn", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla":
		return "fp8"
	case "nvfp4", "mxfp4":
		return "fp4"
	}
	return d
}

// DTypes lists the weight and GEMM dtypes g has tensor units for, in
// engine.dtype's spelling: bf16, fp16, then fp8 and fp4 where it has them.
func (g GPUSpec) DTypes() []string {
	d := []string{"bf16", "fp16"}
	if g.FP8FLOPS > 0 {
		d = append(d, "fp8")
	}
	if g.FP4FLOPS > 0 {
		d = append(d, "fp4")
	}
	return d
}

// KVDTypes lists the KV-cache dtypes g can attend over natively: bf16,
// fp16, and fp8 where it has FP8 tensor cores (FlashAttention-3's and
// FlashInfer's FP8 attention need them). There is no FP4 KV cache.
func (g GPUSpec) KVDTypes() []string {
	d := []string{"bf16", "fp16"}
	if g.FP8FLOPS > 0 {
		d = append(d, "fp8")
	}
	return d
}

// dtypeUnits names the tensor units a dtype needs and the first
// generations that have them; "" for a dtype every catalog GPU runs.
func dtypeUnits(d string) string {
	switch d {
	case "fp8":
		return "FP8 tensor cores (NVIDIA Ada Lovelace, Hopper or later)"
	case "fp4":
		return "FP4 tensor cores (NVIDIA Blackwell or later)"
	}
	return ""
}

// CheckDType reports a weight dtype (kv false) or KV-cache dtype (kv
// true) that g has no tensor units for, as "fp4 needs FP4 tensor cores
// (…), which h100_sxm does not have; it supports bf16, fp16, fp8". A dtype
// it does not know (auto, "", int8, a typo) passes: the callers' own
// checks refuse unknown names.
func (g GPUSpec) CheckDType(dtype string, kv bool) error {
	d := canonDType(dtype)
	units := dtypeUnits(d)
	if units == "" || kv && d != "fp8" {
		return nil
	}
	have := g.DTypes()
	if kv {
		have = g.KVDTypes()
	}
	for _, h := range have {
		if h == d {
			return nil
		}
	}
	name := g.Name
	if name == "" {
		name = "this GPU"
	}
	return fmt.Errorf("%s needs %s, which %s does not have; it supports %s", dtype, units, name, strings.Join(have, ", "))
}
