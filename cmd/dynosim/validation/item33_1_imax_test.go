package validation

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/workload"
)

// TestItem33_1InferenceMAXConfig: the config replaying an InferenceMAX row
// is its published protocol (SemiAnalysisAI/InferenceX @ b89047d5f^,
// benchmarks/70b_*.sh): 10 × concurrency requests, every client at once,
// lengths uniform in [⌊0.8·L⌋, L], no warm-up, and the engine's published
// server flags.
func TestItem33_1InferenceMAXConfig(t *testing.T) {
	type want struct {
		inLo, inHi, outLo, outHi int
		seqs, tokens             int
		chunked                  bool
		waitIters                int
		waitRatio                float64
	}
	for _, c := range []struct {
		name string
		p    Point
		w    want
	}{
		{"vllm h100 8k/1k c16: max-num-seqs CONC", Point{Backend: "vllm", GPU: "h100_sxm", DType: "fp8", TP: 4, ISL: 8192, OSL: 1024, Concurrency: 16},
			want{6553, 8192, 819, 1024, 16, 8192, true, 0, 0}},
		{"vllm h200 1k/8k c64", Point{Backend: "vllm", GPU: "h200_sxm", DType: "fp8", TP: 2, ISL: 1024, OSL: 8192, Concurrency: 64},
			want{819, 1024, 6553, 8192, 64, 8192, true, 0, 0}},
		{"vllm b200 1k/1k c4: max-num-seqs 512", Point{Backend: "vllm", GPU: "b200", DType: "fp4", TP: 1, ISL: 1024, OSL: 1024, Concurrency: 4},
			want{819, 1024, 819, 1024, 512, 8192, true, 0, 0}},
		{"trtllm b200 1k/1k TP2: batch wait 20 / 0.9", Point{Backend: "trtllm", GPU: "b200", DType: "fp4", TP: 2, ISL: 1024, OSL: 1024, Concurrency: 128},
			want{819, 1024, 819, 1024, 2048, 16384, false, 20, 0.9}},
		{"trtllm h200 1k/1k TP8: no batch wait", Point{Backend: "trtllm", GPU: "h200_sxm", DType: "fp8", TP: 8, ISL: 1024, OSL: 1024, Concurrency: 32},
			want{819, 1024, 819, 1024, 2048, 16384, false, 0, 0}},
		{"trtllm h200 8k/1k TP1: no batch wait", Point{Backend: "trtllm", GPU: "h200_sxm", DType: "fp8", TP: 1, ISL: 8192, OSL: 1024, Concurrency: 8},
			want{6553, 8192, 819, 1024, 2048, 16384, false, 0, 0}},
	} {
		c.p.Model, c.p.ID = "llama-3.1-70b", "row"
		cfg, err := config.Parse("imax.yaml", []byte(IMAXConfig(c.p)), nil)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		tr, r := cfg.Traffic, cfg.Engine.Workers.Aggregated
		uniform := func(lo, hi int) workload.Length { return workload.Length{Dist: "uniform", Min: lo, Max: hi} }
		for _, f := range []struct {
			what      string
			got, want any
		}{
			{"load", tr.Load.Type, "concurrency"},
			{"concurrency", tr.Load.Concurrency, c.p.Concurrency},
			{"ramp (all clients at once)", tr.Load.RampUpSeconds, 0.0},
			{"requests", tr.Stop.Requests, 10 * c.p.Concurrency},
			{"warm-up", tr.Warmup.On(), false},
			{"input_tokens", tr.Source.InputTokens.Length(), uniform(c.w.inLo, c.w.inHi)},
			{"output_tokens", tr.Source.OutputTokens.Length(), uniform(c.w.outLo, c.w.outHi)},
			{"backend", cfg.Engine.Backend, c.p.Backend},
			{"tensor", r.Parallelism.Tensor, c.p.TP},
			{"max_sequences", r.Scheduler.MaxSequences, c.w.seqs},
			{"max_batched_tokens", r.Scheduler.MaxBatchedTokens, c.w.tokens},
			{"chunked_prefill", r.Scheduler.ChunkedPrefill, c.w.chunked},
			{"async_scheduling", r.Scheduler.AsyncScheduling, true},
			{"batch_wait_timeout_iters", r.Scheduler.BatchWaitTimeoutIters, c.w.waitIters},
			{"batch_wait_max_tokens_ratio", r.Scheduler.BatchWaitMaxTokensRatio, c.w.waitRatio},
			{"kv dtype", r.KVCache.DType, "fp8"},
			{"prefix caching", r.KVCache.PrefixCaching, false},
		} {
			if f.got != f.want {
				t.Errorf("%s: %s = %v, want %v", c.name, f.what, f.got, f.want)
			}
		}
	}
}

// TestItem33_1InferenceMAXRows: the source is exactly the Llama-3.1-70B
// rows of AIConfigurator's 2026-04-06 import (441 of them), never another
// model's or another import's row; the doc lists the published flags the
// config cannot express.
func TestItem33_1InferenceMAXRows(t *testing.T) {
	pts, err := AICPoints()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pts {
		if IsIMAX(p) {
			n++
		} else if p.Model == "llama-3.1-70b" {
			t.Errorf("%s: a Llama-3.1-70B row left out (provenance %q)", p.ID, p.Provenance)
		}
	}
	if n != 441 {
		t.Errorf("%d InferenceMAX rows, want 441", n)
	}
	const prov = "source_file=2026-04-06.csv; model=Llama-3.1-70B; silicon_concurrency=8; measured=2025-10-29T00:00:00.000Z; wip=False"
	for _, c := range []struct {
		name string
		p    Point
		want bool
	}{
		{"InferenceMAX row", Point{Model: "llama-3.1-70b", Provenance: prov}, true},
		{"another import", Point{Model: "llama-3.1-70b", Provenance: strings.Replace(prov, "2026-04-06", "2026-01-01", 1)}, false},
		{"another model", Point{Model: "llama-3.1-8b", Provenance: strings.Replace(prov, "70B", "8B", 1)}, false},
		{"no provenance", Point{Model: "llama-3.1-70b"}, false},
	} {
		if got := IsIMAX(c.p); got != c.want {
			t.Errorf("%s: IsIMAX = %v, want %v", c.name, got, c.want)
		}
	}
	about := imaxSource(nil).About
	for _, flag := range []string{"FULL_DECODE_ONLY", "enable_fi_allreduce_fusion", "cuda_graph_config", "stream_interval", "max-model-len", "free_gpu_memory_fraction"} {
		if !strings.Contains(about, flag) {
			t.Errorf("the doc does not list the unexpressed flag %s", flag)
		}
	}
}
