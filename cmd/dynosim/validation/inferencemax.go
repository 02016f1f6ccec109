package validation

import (
	"fmt"
	"strings"

	"github.com/dynosim/dynosim-web/timing"
)

// The InferenceMAX adapter. AIConfigurator's Llama-3.1-70B rows
// (silicon_data_source "source_file=2026-04-06.csv; model=Llama-3.1-70B;
// … measured=2025-10-29") are SemiAnalysis InferenceMAX runs: the same
// grid (ISL/OSL 1k/1k, 1k/8k, 8k/1k; concurrency 4–128; TP 1–8; H100,
// H200, B200; vLLM and TRT-LLM; FP8/FP4) as the Llama-70B sweep InferenceMAX
// ran until it dropped that model on 2025-10-29 (SemiAnalysisAI/InferenceX
// @ b89047d5f^: .github/workflows/70b-tmpl.yml, full-sweep-tmpl.yml and
// benchmarks/70b_*.sh). Those files publish both sides, replayed here
// instead of the harness's own protocol (Config):
//
//   - client (bench_serving/benchmark_serving.py): --dataset-name random
//     --random-range-ratio 0.8 (lengths uniform in [⌊0.8·L⌋, L], both
//     ends included), --num-prompts 10·CONC --max-concurrency CONC
//     --request-rate inf --ignore-eos: every client starts at once, no
//     warm-up left out of the means;
//   - vLLM (v0.10.2): --max-num-seqs CONC on H100/H200, 512 on B200;
//     max-num-batched-tokens 8192; async-scheduling; no prefix caching;
//     kv-cache-dtype fp8; --gpu-memory-utilization 0.9;
//   - TRT-LLM (1.1.0rc2.post2, trtllm-serve): --max_num_tokens 16384, no
//     --max_batch_size (2048, its default), chunked prefill off (its
//     default); kv_cache_config dtype fp8, enable_block_reuse false; for
//     1k/1k below TP8 batch_wait_timeout_iters 20 and
//     batch_wait_max_tokens_ratio 0.9.
//
// Published flags the simulator cannot express are listed in IMAXUnmodelled.

// IMAXSource is the name the JSON and the doc give this source.
const IMAXSource = "InferenceMAX Llama-3.1-70B"

// imaxGate is TestValidationDoc's bar, issue 33's: 12.5 % TTFT and 7.9 %
// TPOT today (with the tensor-parallel sync term, timing/tpsync.go).
const imaxGate = "median |error| of TTFT ≤ 15 % and TPOT ≤ 8 %"

// IsIMAX reports whether a point is one of InferenceMAX's: the Llama-3.1-70B
// rows whose provenance names AIConfigurator's 2026-04-06 import of the
// model's sweep.
func IsIMAX(p Point) bool {
	return p.Model == "llama-3.1-70b" && strings.Contains(p.Provenance, "source_file=2026-04-06.csv") &&
		strings.Contains(p.Provenance, "model=Llama-3.1-70B")
}

// IMAXPoints are the InferenceMAX rows of the embedded AIConfigurator file.
func IMAXPoints() ([]Point, error) {
	pts, err := AICPoints()
	if err != nil {
		return nil, err
	}
	var out []Point
	for _, p := range pts {
		if IsIMAX(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// imaxServer is the published server side of a row, in our config keys.
type imaxServer struct {
	MaxSequences, MaxBatchedTokens int
	ChunkedPrefill                 bool
	BatchWaitIters                 int
	BatchWaitRatio                 float64
}

func imaxServerOf(p Point) imaxServer {
	if p.Backend == "trtllm" {
		s := imaxServer{MaxSequences: 2048, MaxBatchedTokens: 16384}
		if p.ISL == 1024 && p.OSL == 1024 && p.TP < 8 {
			s.BatchWaitIters, s.BatchWaitRatio = 20, 0.9
		}
		return s
	}
	s := imaxServer{MaxSequences: p.Concurrency, MaxBatchedTokens: 8192, ChunkedPrefill: true} // vLLM V1 always chunks
	if p.GPU == "b200" {
		s.MaxSequences = 512
	}
	return s
}

// imaxLens is bench_serving's random-dataset range at --random-range-ratio
// 0.8: randint(int(L·0.8), L+1).
func imaxLens(l int) (lo, hi int) { return l * 8 / 10, l }

// IMAXConfig is the YAML replaying p with InferenceMAX's client and server
// settings.
func IMAXConfig(p Point) string {
	s := imaxServerOf(p)
	il, ih := imaxLens(p.ISL)
	ol, oh := imaxLens(p.OSL)
	wait := ""
	if s.BatchWaitIters > 0 {
		wait = fmt.Sprintf(", batch_wait_timeout_iters: %d, batch_wait_max_tokens_ratio: %g", s.BatchWaitIters, s.BatchWaitRatio)
	}
	return fmt.Sprintf(`traffic:
  source: {type: synthetic, input_tokens: {min: %d, max: %d}, output_tokens: {min: %d, max: %d}}
  load: {type: concurrency, concurrency: %d}
  stop: {requests: %d}
engine:
  backend: %s
  model: %s
  hardware: %s
  dtype: %s
  workers:
    aggregated:
      parallelism: {tensor: %d}
      scheduler: {max_batched_tokens: %d, max_sequences: %d, chunked_prefill: %t, async_scheduling: true%s}
      kv_cache: {prefix_caching: false, dtype: fp8, capacity: {type: default, memory_fraction: 0.9}}
`, il, ih, ol, oh, p.Concurrency, 10*p.Concurrency, p.Backend, p.Model, p.GPU, p.DType, p.TP,
		s.MaxBatchedTokens, s.MaxSequences, s.ChunkedPrefill, wait)
}

// IMAXUnmodelled are the published server settings the config cannot
// express, per engine; docs/validation.md lists them.
var IMAXUnmodelled = []string{
	"vLLM on B200: `compilation-config` `cudagraph_mode: FULL_DECODE_ONLY` and the FlashInfer all-reduce and attention fusion passes (`enable_fi_allreduce_fusion`, `enable_attn_fusion`, `VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB`); on H100/H200 vLLM's default CUDA graphs. The roofline prices a pass without graph-launch or fusion effects.",
	"vLLM `max-model-len` (10240, or ISL + OSL + 20/200): no request reaches it, so it changes no timing.",
	"TRT-LLM `cuda_graph_config: {enable_padding: true, max_batch_size: 1024}`: padded CUDA-graph batches are not priced (a decode pass costs its real batch).",
	"TRT-LLM `stream_interval: 10`: tokens reach the client every 10 passes; the report times every token when it is generated, so TTFT and mean TPOT (over a whole request) are unaffected, ITL is.",
	"TRT-LLM `kv_cache_config.free_gpu_memory_fraction` (default 0.9 of the memory left after weights) is replayed as `memory_fraction: 0.9`, as for vLLM.",
}

// imaxFit reports whether p is in InferenceMAX's fitted split, the only
// rows issue 33 item 4's tensor-parallel sync term (timing/tpsync.go) is
// fitted on: H100 (NVLink4, vLLM) and B200 FP8 (NVLink5, vLLM and TRT-LLM).
// H200 and B200 FP4 are held out, chosen before fitting: another GPU on
// the same fabric, another precision on the same GPU, and both engines on
// both fabrics. Every row was measured on the same date, so there is no
// split by date.
func imaxFit(p Point) bool { return p.GPU == "h100_sxm" || p.GPU == "b200" && p.DType == "fp8" }

// imaxSource scores the InferenceMAX replays; the rows imaxFit leaves out
// are its held-out part.
func imaxSource(rs []Result) Source {
	s := Source{Name: IMAXSource, Protocol: "fixed-concurrency points", Gate: imaxGate,
		Split: "by GPU and precision: H100 and B200 FP8 fitted (the tensor-parallel sync term, `timing/tpsync.go`, TestItem33_4Fit); H200 and B200 FP4 held out"}
	var b strings.Builder
	b.WriteString("Replayed with InferenceMAX's published client and server settings (`cmd/dynosim/validation/inferencemax.go`, `IMAXConfig`): " +
		"10 × concurrency requests, every client starting at once (no ramp), input and output lengths uniform between 80 % and 100 % of the target, " +
		"no warm-up left out; vLLM `max_sequences` = concurrency (512 on B200), `max_batched_tokens` 8192, async scheduling; " +
		"TRT-LLM `max_batched_tokens` 16384, `max_sequences` 2048, no chunked prefill, `batch_wait_timeout_iters` 20 / `batch_wait_max_tokens_ratio` 0.9 at 1k/1k below TP8; " +
		"FP8 KV cache, no prefix caching. Published settings not expressed:\n")
	for _, u := range IMAXUnmodelled {
		b.WriteString("\n- " + u)
	}
	s.About = b.String()
	for _, r := range rs {
		if r.Err != nil {
			continue
		}
		s.points = append(s.points, scored{Family: timing.Family(r.GPU), Engine: r.Backend, HeldOut: !imaxFit(r.Point),
			TTFT: r.TTFTErr(), TPOT: r.TPOTErr(), E2E: e2eErr(r)})
	}
	return s
}
