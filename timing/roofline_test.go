package timing

import (
	"math"
	"strings"
	"testing"
)

func TestKVBytesPerToken(t *testing.T) {
	// mocker.md §7.1: 2 layers, 4 KV heads, 8 attention heads, hidden 64,
	// bf16 → 2·2·4·8·2 = 256.
	small, err := ParseHFConfig([]byte(`{"num_hidden_layers": 2, "num_key_value_heads": 4, "num_attention_heads": 8,
		"hidden_size": 64, "intermediate_size": 128, "vocab_size": 100, "torch_dtype": "bfloat16"}`), "small/config.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		m      ModelSpec
		tensor int
		want   int64
	}{
		{"§7.1 example", small, 1, 256},
		{"§7.1 example tp2", small, 2, 128},
		{"§7.1 example tp8 (replicated head)", small, 8, 64},
		// 32 layers × 2 × 8 heads × 128 × 2 B = 131072
		{"llama-3.1-8b", mustModel(t, "llama-3.1-8b"), 1, 131072},
		// Explicit head_dim 128 (hidden/heads would give 80): 64 × 2 × 8 × 128 × 2 = 262144
		{"qwen3-32b", mustModel(t, "qwen3-32b"), 1, 262144},
		// TP4: 2 KV heads per rank → 65536
		{"qwen3-32b tp4", mustModel(t, "qwen3-32b"), 4, 65536},
		// MLA latent: 61 × (512 + 64) × 2 = 70272, same on every TP rank
		{"deepseek-v3", mustModel(t, "deepseek-v3"), 1, 70272},
		{"deepseek-v3 tp8", mustModel(t, "deepseek-v3"), 8, 70272},
	}
	for _, c := range cases {
		if got := KVBytesPerToken(c.m, c.tensor); got != c.want {
			t.Errorf("%s: KVBytesPerToken = %d, want %d", c.name, got, c.want)
		}
	}
}

func mustModel(t testing.TB, name string) ModelSpec {
	t.Helper()
	m, err := LookupModel(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustGPU(t testing.TB, name string) GPUSpec {
	t.Helper()
	g, err := LookupGPU(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestEstimateBlocks(t *testing.T) {
	cases := []struct {
		name  string
		gpu   string
		model string
		par   Parallelism
		frac  float64
		block int
		want  int
	}{
		// llama-3.1-8b on h100_sxm, TP1, 0.9, block 64, checked by hand:
		//   memory   81559 MiB = 85,520,809,984 B; × 0.9 = 76,968,728,985.6
		//   weights  32 × (2·4096·4096 + 2·4096·1024 + 3·4096·14336) + 2·128256·4096
		//          = 32 × 218,103,808 + 1,050,673,152 = 8,029,995,008 params × 2 B
		//          = 16,059,990,016 B
		//   reserve  2 GiB = 2,147,483,648 B
		//   free     58,761,255,321.6 B
		//   block    64 × 131,072 B = 8,388,608 B → 7004.86 → 7004
		{"llama-3.1-8b h100 tp1", "h100_sxm", "llama-3.1-8b", Parallelism{Tensor: 1}, 0.9, 64, 7004},
		// llama-3.1-70b on h100_sxm, TP4, 0.9, block 64:
		//   weights  80 × (2·8192·8192 + 2·8192·1024 + 3·8192·28672) + 2·128256·8192
		//          = 80 × 855,638,016 + 2,101,346,304 = 70,552,387,584 params × 2 B / 4
		//          = 35,276,193,792 B per GPU
		//   free     76,968,728,985.6 − 35,276,193,792 − 2,147,483,648 = 39,545,051,545.6 B
		//   KV/token per GPU: 80 × 2 × (8/4) × 128 × 2 = 81,920 B; block 5,242,880 B
		//   → 7542.62 → 7542
		{"llama-3.1-70b h100 tp4", "h100_sxm", "llama-3.1-70b", Parallelism{Tensor: 4}, 0.9, 64, 7542},
	}
	for _, c := range cases {
		got, err := EstimateBlocks(mustGPU(t, c.gpu), mustModel(t, c.model), c.par, c.frac, c.block, 0)
		if err != nil || got != c.want {
			t.Errorf("%s: EstimateBlocks = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	// Does not fit: 70B bf16 on one H100.
	_, err := EstimateBlocks(mustGPU(t, "h100_sxm"), mustModel(t, "llama-3.1-70b"), Parallelism{}, 0.9, 64, 0)
	if err == nil || !strings.Contains(err.Error(), "does not fit on h100_sxm") {
		t.Errorf("want does-not-fit error, got %v", err)
	}
	for _, bad := range []struct {
		frac  float64
		block int
	}{{0, 64}, {1.5, 64}, {0.9, 0}} {
		if _, err := EstimateBlocks(mustGPU(t, "h100_sxm"), mustModel(t, "llama-3.1-8b"), Parallelism{}, bad.frac, bad.block, 0); err == nil {
			t.Errorf("frac %v block %d: want error", bad.frac, bad.block)
		}
	}
	// The extra reserve shrinks capacity.
	a, _ := EstimateBlocks(mustGPU(t, "h100_sxm"), mustModel(t, "llama-3.1-8b"), Parallelism{}, 0.9, 64, 0)
	b, _ := EstimateBlocks(mustGPU(t, "h100_sxm"), mustModel(t, "llama-3.1-8b"), Parallelism{}, 0.9, 64, 1<<30)
	if a-b != 128 { // 1 GiB / 8 MiB per block
		t.Errorf("extra reserve: %d → %d, want 128 fewer", a, b)
	}
}

func TestModelParams(t *testing.T) {
	cases := []struct {
		name          string
		total, active float64 // billions, published sizes
	}{
		{"llama-3.1-8b", 8.03, 8.03},
		{"llama-3.1-70b", 70.6, 70.6},
		{"qwen3-32b", 32.8, 32.8},
		{"qwen3-30b-a3b", 30.5, 3.3},
		{"qwen3-235b-a22b", 235, 22},
		{"deepseek-v3", 671, 37},
		{"mistral-7b", 7.25, 7.25},
	}
	for _, c := range cases {
		tot, act := mustModel(t, c.name).Params()
		if math.Abs(tot/1e9-c.total)/c.total > 0.02 || math.Abs(act/1e9-c.active)/c.active > 0.05 {
			t.Errorf("%s: params %.2fB (active %.2fB), want %.2fB (%.2fB)", c.name, tot/1e9, act/1e9, c.total, c.active)
		}
	}
}

func TestParseHFConfig(t *testing.T) {
	qwen := `{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 48,
	  "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
	  "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936,
	  "tie_word_embeddings": false, "torch_dtype": "bfloat16"}`
	m, err := ParseHFConfig([]byte(qwen), "qwen/config.json")
	if err != nil {
		t.Fatal(err)
	}
	want := mustModel(t, "qwen3-30b-a3b")
	want.Name = ""
	if m != want {
		t.Errorf("qwen3-30b-a3b config:\n got %+v\nwant %+v", m, want)
	}
	ds := `{"hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
	  "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
	  "num_experts_per_tok": 8, "first_k_dense_replace": 3, "kv_lora_rank": 512, "q_lora_rank": 1536,
	  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
	  "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"}}`
	m, err = ParseHFConfig([]byte(ds), "ds/config.json")
	if err != nil {
		t.Fatal(err)
	}
	want = mustModel(t, "deepseek-v3")
	want.Name = ""
	if m != want {
		t.Errorf("deepseek-v3 config:\n got %+v\nwant %+v", m, want)
	}
	// Multimodal wrapper: the text_config is read.
	mm := `{"architectures": ["X"], "torch_dtype": "bfloat16", "text_config": {"hidden_size": 64,
	  "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 100}}`
	if m, err = ParseHFConfig([]byte(mm), "mm.json"); err != nil || KVBytesPerToken(m, 1) != 256 {
		t.Errorf("text_config: %+v, %v", m, err)
	}
	for _, c := range []struct{ data, want string }{
		{`{`, "bad.json: unexpected end of JSON input"},
		{`{"num_hidden_layers": "x"}`, "bad.json: num_hidden_layers: want a non-negative integer"},
		{`{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10}`, "bad.json: intermediate_size: must be > 0"},
		{`{"hidden_size": 64}`, "bad.json: num_hidden_layers: must be > 0"},
	} {
		if _, err := ParseHFConfig([]byte(c.data), "bad.json"); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err %v, want prefix %q", c.data, err, c.want)
		}
	}
}

func TestNewRooflineErrors(t *testing.T) {
	cases := []struct {
		spec RooflineSpec
		want string
	}{
		{RooflineSpec{Model: "llama-9", Hardware: "h100_sxm"}, `unknown model "llama-9"`},
		{RooflineSpec{Model: "llama-3.1-8b", Hardware: "tpu"}, `unknown hardware "tpu"`},
		{RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", DType: "int3"}, `dtype: unknown "int3"`},
		{RooflineSpec{Model: "qwen3-30b-a3b", Hardware: "h100_sxm", Parallelism: Parallelism{Tensor: 2, MoEExpert: 4}}, "tensor × attention_data (2 × 1) must equal moe_tensor × moe_expert (1 × 4)"},
		{RooflineSpec{ModelConfig: []byte(`{}`), ModelConfigName: "x/config.json", Hardware: "h100_sxm"}, "x/config.json: num_hidden_layers"},
	}
	for _, c := range cases {
		if _, err := NewRoofline(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.spec, err, c.want)
		}
	}
	// Names are forgiving.
	for _, n := range [][2]string{{"meta-llama/Llama-3.1-8B-Instruct", "H100-SXM"}, {"Qwen3_32B", "b200"}} {
		if _, err := NewRoofline(RooflineSpec{Model: n[0], Hardware: n[1]}); err != nil {
			t.Errorf("%v: %v", n, err)
		}
	}
}

// TestRooflineShape checks the qualitative behaviour every caller relies on.
func TestRooflineShape(t *testing.T) {
	for _, name := range ModelNames() {
		tp := map[string]int{"llama-3.1-70b": 4, "qwen3-32b": 2, "qwen3-235b-a22b": 8, "deepseek-v3": 8}[name]
		r, err := NewRoofline(RooflineSpec{Model: name, Hardware: "h200_sxm", Parallelism: Parallelism{Tensor: tp}})
		if err != nil {
			t.Fatal(err)
		}
		var prev float64
		for _, b := range []int{1, 8, 64, 256} {
			d := r.DecodeMs(b, b*2048, 2048, 0)
			if !(d > prev) || math.IsNaN(d) {
				t.Errorf("%s: decode not increasing in batch: %v after %v", name, d, prev)
			}
			prev = d
		}
		if r.DecodeMs(0, 0, 0, 0) != 0 || r.PrefillMs(0, 10, 0) != 0 || r.PrefillMs(1, 10, 10) != 0 {
			t.Errorf("%s: empty passes must cost 0", name)
		}
		// A cached prefix makes prefill cheaper, longer prompts dearer.
		if !(r.PrefillMs(1, 4096, 2048) < r.PrefillMs(1, 4096, 0)) || !(r.PrefillMs(1, 4096, 0) < r.PrefillMs(1, 8192, 0)) {
			t.Errorf("%s: prefill not monotone", name)
		}
		// Prefill of many tokens is compute-bound: ≥ 2·active·T / peak.
		_, act := r.Model.Params()
		floor := 1000 * 2 * act / float64(max(tp, 1)) * 8192 / r.GPU.BF16FLOPS
		if p := r.PrefillMs(1, 8192, 0); p < floor {
			t.Errorf("%s: prefill %v ms below the compute floor %v", name, p, floor)
		}
	}
	// More tensor parallelism makes a memory-bound decode step faster.
	a := mustRoofline(t, "llama-3.1-70b", "h100_sxm", "", 4).DecodeMs(1, 1024, 1024, 0)
	b := mustRoofline(t, "llama-3.1-70b", "h100_sxm", "", 8).DecodeMs(1, 1024, 1024, 0)
	if !(b < a) {
		t.Errorf("tp8 %v not faster than tp4 %v", b, a)
	}
	// FP8 weights halve the streamed bytes: the step net of the engine's
	// CPU costs (overhead.go, the same for both dtypes) is ≥ 30 % cheaper.
	r8 := mustRoofline(t, "llama-3.1-8b", "h100_sxm", "fp8", 1)
	o := r8.Overhead().PassMs + r8.Overhead().PerSeqMs
	if f8, bf := r8.DecodeMs(1, 1024, 1024, 0)-o,
		mustRoofline(t, "llama-3.1-8b", "h100_sxm", "", 1).DecodeMs(1, 1024, 1024, 0)-o; !(f8 < 0.7*bf) {
		t.Errorf("fp8 decode %v vs bf16 %v (net of %v ms engine overhead)", f8, bf, o)
	}
	// MoE: batch 1 reads only k of E experts, so it is far cheaper than a
	// dense model of the same total size.
	moe := mustRoofline(t, "qwen3-30b-a3b", "h100_sxm", "", 1)
	if d1, d256 := moe.DecodeMs(1, 1024, 1024, 0), moe.DecodeMs(256, 256*1024, 1024, 0); !(d256 > 3*d1) {
		t.Errorf("MoE decode b1 %v, b256 %v: want expert reads to grow with batch", d1, d256)
	}
	// Deterministic.
	r := mustRoofline(t, "deepseek-v3", "b200", "", 8)
	if r.DecodeMs(17, 17000, 1000, 0) != r.DecodeMs(17, 17000, 1000, 0) {
		t.Error("not deterministic")
	}
}

// A mixed pass streams the weights once: it costs less than a prefill
// pass plus a decode step, and no less than either alone.
func TestMixedPassStreamsWeightsOnce(t *testing.T) {
	for _, c := range []struct {
		model, gpu string
		tp         int
	}{{"llama-3.1-8b", "h100_sxm", 1}, {"llama-3.1-70b", "h200_sxm", 4}, {"qwen3-30b-a3b", "b200", 1}} {
		r := mustRoofline(t, c.model, c.gpu, "", c.tp)
		for _, sh := range []struct{ batch, isl, prefix, dec, kv int }{{1, 2048, 0, 32, 32 * 1500}, {4, 512, 256, 128, 128 * 800}, {1, 64, 0, 256, 256 * 4000}} {
			p, d := r.PrefillMs(sh.batch, sh.isl, sh.prefix), r.DecodeMs(sh.dec, sh.kv, sh.kv/sh.dec, 0)
			m := r.MixedMs(sh.batch, sh.isl, sh.prefix, sh.dec, sh.kv, sh.kv/sh.dec, 0)
			if !(m < p+d && m >= max(p, d)) {
				t.Errorf("%s on %s tp%d %+v: mixed %.3f ms, want in [max(%.3f, %.3f), sum)", c.model, c.gpu, c.tp, sh, m, p, d)
			}
		}
		if got, want := r.MixedMs(0, 0, 0, 8, 8000, 1000, 0), r.DecodeMs(8, 8000, 1000, 0); got != want {
			t.Errorf("%s: decode-only mixed %v, want DecodeMs %v", c.model, got, want)
		}
	}
}
