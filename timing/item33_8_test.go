package timing

import "testing"

// TestItem33_8FP8KVRead: under vLLM an FP8 KV cache is read by attention
// as fast as a BF16 one except on Blackwell (attnKVPerToken); TRT-LLM and
// SGLang read it at its own bytes; the cache's size (KVBytesPerToken) is
// FP8's everywhere.
func TestItem33_8FP8KVRead(t *testing.T) {
	for _, c := range []struct {
		engine, gpu, kv string
		readAsBF16      bool
	}{
		{"vllm", "h100_sxm", "fp8", true},
		{"", "h200_sxm", "fp8", true},
		{"vllm", "b200", "fp8", false},
		{"vllm", "h100_sxm", "", false},
		{"vllm", "h100_sxm", "bf16", false},
		{"trtllm", "h100_sxm", "fp8", false},
		{"sglang", "h200_sxm", "fp8", false},
	} {
		r, err := NewRoofline(RooflineSpec{Model: "llama-3.1-70b", Hardware: c.gpu, Parallelism: Parallelism{Tensor: 2}, KVDType: c.kv, Engine: c.engine})
		if err != nil {
			t.Fatal(err)
		}
		bf16, err := NewRoofline(RooflineSpec{Model: "llama-3.1-70b", Hardware: c.gpu, Parallelism: Parallelism{Tensor: 2}, KVDType: "bf16", Engine: c.engine})
		if err != nil {
			t.Fatal(err)
		}
		size := float64(r.KVBytesPerToken())
		want := size
		if c.readAsBF16 {
			want = float64(bf16.KVBytesPerToken())
		}
		if r.kvPerToken != want {
			t.Errorf("%s %s kv %q: attention reads %g bytes per token, want %g (cache holds %g)", c.engine, c.gpu, c.kv, r.kvPerToken, want, size)
		}
		if c.kv == "fp8" && 2*size != float64(bf16.KVBytesPerToken()) {
			t.Errorf("%s %s: FP8 cache %g bytes per token, want half of BF16's %d", c.engine, c.gpu, size, bf16.KVBytesPerToken())
		}
	}
}

// TestItem33_8EngineOverhead: the engines' overheads (overhead.go), vLLM's
// fitted per-sequence cost, and SetPerSeqMs restoring it.
func TestItem33_8EngineOverhead(t *testing.T) {
	for _, c := range []struct {
		backend         string
		pass, seq, fend float64
	}{
		{"", 0.3, 0.025, 3.7}, {"vllm", 0.3, 0.025, 3.7},
		{"sglang", 0.2, 0.005, 3.7}, {"trtllm", 0.2, 0.003, 3.7},
	} {
		o, err := EngineOverhead(c.backend)
		if err != nil || o.PassMs != c.pass || o.PerSeqMs != c.seq || o.FrontendMs != c.fend {
			t.Errorf("%q: %+v, %v", c.backend, o, err)
		}
	}
	if _, err := EngineOverhead("tgi"); err == nil {
		t.Error("tgi: no error")
	}
	old := SetPerSeqMs("vllm", 0.1)
	r, err := NewRoofline(RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm"})
	SetPerSeqMs("vllm", old)
	if err != nil || r.Overhead().PerSeqMs != 0.1 || old != 0.025 {
		t.Errorf("SetPerSeqMs: roofline built after it has %v (old %v, %v)", r.Overhead().PerSeqMs, old, err)
	}
	if o, _ := EngineOverhead("vllm"); o.PerSeqMs != 0.025 {
		t.Errorf("not restored: %v", o.PerSeqMs)
	}
}
