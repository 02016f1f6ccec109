package timing

import (
	"slices"
	"strings"
	"testing"
)

// Issue 30 item 3: the GPU catalog says which dtypes each GPU has tensor
// units for (NVIDIA's Ampere, Ada Lovelace, Hopper and Blackwell
// whitepapers), and the roofline refuses a weight or KV dtype the GPU
// lacks instead of pricing it as another (fp4 on H100 was priced as FP8).
func TestItem30_3DtypeGPUCatalog(t *testing.T) {
	for _, tc := range []struct {
		gpu      string
		dtypes   []string
		kvDTypes []string
	}{
		{"a100_80gb", []string{"bf16", "fp16"}, []string{"bf16", "fp16"}},                                // Ampere
		{"a100_40gb", []string{"bf16", "fp16"}, []string{"bf16", "fp16"}},                                // Ampere
		{"l40s", []string{"bf16", "fp16", "fp8"}, []string{"bf16", "fp16", "fp8"}},                       // Ada Lovelace
		{"rtx_4090", []string{"bf16", "fp16", "fp8"}, []string{"bf16", "fp16", "fp8"}},                   // Ada Lovelace
		{"h100_sxm", []string{"bf16", "fp16", "fp8"}, []string{"bf16", "fp16", "fp8"}},                   // Hopper
		{"h200_sxm", []string{"bf16", "fp16", "fp8"}, []string{"bf16", "fp16", "fp8"}},                   // Hopper
		{"b200", []string{"bf16", "fp16", "fp8", "fp4"}, []string{"bf16", "fp16", "fp8"}},                // Blackwell
		{"rtx_pro_6000", []string{"bf16", "fp16", "fp8", "fp4"}, []string{"bf16", "fp16", "fp8"}},        // Blackwell
		{"rtx_pro_6000_server", []string{"bf16", "fp16", "fp8", "fp4"}, []string{"bf16", "fp16", "fp8"}}, // Blackwell
	} {
		g, err := LookupGPU(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.DTypes(); !slices.Equal(got, tc.dtypes) {
			t.Errorf("%s: DTypes() = %v, want %v", tc.gpu, got, tc.dtypes)
		}
		if got := g.KVDTypes(); !slices.Equal(got, tc.kvDTypes) {
			t.Errorf("%s: KVDTypes() = %v, want %v", tc.gpu, got, tc.kvDTypes)
		}
	}
	if got, want := len(GPUNames()), 9; got != want {
		t.Errorf("the catalog has %d GPUs, this table %d: add the new GPU's generation here", got, want)
	}

	for _, tc := range []struct {
		name string
		spec RooflineSpec
		want string // "" = built
	}{
		{"fp4 on h100", RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", DType: "fp4"},
			"dtype: fp4 needs FP4 tensor cores (NVIDIA Blackwell or later), which h100_sxm does not have; it supports bf16, fp16, fp8"},
		{"nvfp4 on h200", RooflineSpec{Model: "llama-3.1-8b", Hardware: "h200_sxm", DType: "nvfp4"}, "dtype: nvfp4 needs FP4 tensor cores"},
		{"fp8 on a100", RooflineSpec{Model: "llama-3.1-8b", Hardware: "a100_80gb", DType: "fp8"},
			"dtype: fp8 needs FP8 tensor cores (NVIDIA Ada Lovelace, Hopper or later), which a100_80gb does not have; it supports bf16, fp16"},
		{"kv fp8_e5m2 on a100", RooflineSpec{Model: "llama-3.1-8b", Hardware: "a100_40gb", KVDType: "fp8_e5m2"},
			"kv_cache dtype: fp8_e5m2 needs FP8 tensor cores (NVIDIA Ada Lovelace, Hopper or later), which a100_40gb does not have; it supports bf16, fp16"},
		{"fp8 on h100", RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", DType: "fp8", KVDType: "fp8"}, ""},
		{"fp4 on b200", RooflineSpec{Model: "llama-3.1-8b", Hardware: "b200", DType: "fp4", KVDType: "fp8"}, ""},
		{"bf16 on a100", RooflineSpec{Model: "llama-3.1-8b", Hardware: "a100_80gb", DType: "bf16", KVDType: "fp16"}, ""},
		{"int8 kv on a100 (INT8 units since Turing)", RooflineSpec{Model: "llama-3.1-8b", Hardware: "a100_80gb", KVDType: "int8"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRoofline(tc.spec)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want a model", err)
			case tc.want != "" && err == nil:
				t.Fatalf("built, want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}

	// A spec built in code (not from the catalog) declares its formats by
	// its FP8/FP4 rates and is checked the same way.
	custom := GPUSpec{Name: "custom", MemoryBytes: 80e9, MemBW: 2e12, BF16FLOPS: 300e12, LinkBW: 100e9, Fabric: FabricPCIeP2P}
	m, _ := LookupModel("llama-3.1-8b")
	if _, err := NewRooflineFrom(m, custom, Parallelism{}, "fp8", ""); err == nil || !strings.Contains(err.Error(), "which custom does not have; it supports bf16, fp16") {
		t.Errorf("fp8 on a GPUSpec without FP8 rate: err = %v", err)
	}
	custom.FP8FLOPS = 600e12
	if _, err := NewRooflineFrom(m, custom, Parallelism{}, "fp8", "fp8"); err != nil {
		t.Errorf("fp8 on a GPUSpec with an FP8 rate: %v", err)
	}
}
