package validation

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
)

// Result is one point's prediction.
type Result struct {
	Point
	PredTTFTMs, PredTPOTMs float64
	Err                    error // the run failed (the point is reported, not scored)
}

// TTFTErr and TPOTErr are signed relative errors (predicted/measured − 1).
func (r Result) TTFTErr() float64 { return r.PredTTFTMs/r.TTFTMs - 1 }
func (r Result) TPOTErr() float64 { return r.PredTPOTMs/r.TPOTMs - 1 }

// ServerConfig is the engine section of the run that stands for p, for
// the rows whose pipeline publishes no server flags (AIPerfConfig): knobs
// the row does not state take the engine's defaults for that version and
// GPU class (docs/validation.md lists them).
func ServerConfig(p Point) string {
	sched := fmt.Sprintf("{max_batched_tokens: %d, max_sequences: %d, async_scheduling: %t}", 8192, 1024, vllmAsync(p.Version)) // vLLM V1 on ≥ 70 GiB GPUs
	extra, capacity := "", "{type: default, memory_fraction: 0.9}"
	switch p.Backend {
	case "sglang":
		// SGLang's server_args: chunked_prefill_size 8192 below 160 GB of
		// GPU memory, 16384 above; max_running_requests from memory.
		chunk := 8192
		if p.GPU == "b200" {
			chunk = 16384
		}
		sched = fmt.Sprintf("{max_batched_tokens: %d, max_sequences: 0, async_scheduling: true}", chunk)
		extra = fmt.Sprintf("\n      sglang: {chunked_prefill_size: %d, max_prefill_tokens: 16384}", chunk)
		capacity = "{type: default}" // SGLang's own mem_fraction_static (sim's sizePool)
	case "trtllm":
		sched = "{max_batched_tokens: 8192, max_sequences: 2048, async_scheduling: true}" // trtllm-serve defaults
	}
	return fmt.Sprintf(`engine:
  backend: %s
  model: %s
  hardware: %s
  dtype: %s
  workers:
    aggregated:
      parallelism: {tensor: %d}
      scheduler: %s%s
      kv_cache: {prefix_caching: false, dtype: %s, capacity: %s}
`, p.Backend, p.Model, p.GPU, p.DType, p.TP, sched, extra, kvDType(p), capacity)
}

// vllmAsync: vLLM turned async scheduling on by default at the end of its
// plan (vllm-project/vllm#27679, last item #27614; roadmap Q4 2025), in
// the 0.14 releases; the 0.12 rows and the unversioned 2025 rows predate
// it. SGLang's overlap scheduler (default since 0.4) and TRT-LLM's
// PyTorch-backend overlap scheduler (default in 1.x) are always on.
func vllmAsync(version string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 0 || minor >= 14
}

// kvDType: TRT-LLM's quantized checkpoints (ModelOpt FP8/NVFP4) quantize
// the KV cache to FP8 too; vLLM and SGLang keep the model dtype unless
// --kv-cache-dtype says otherwise, which the measurements do not state.
func kvDType(p Point) string {
	if p.Backend == "trtllm" && p.DType != "bf16" {
		return "fp8"
	}
	return "auto"
}

// Adapter is the replay of p with the published protocol nearest to its
// measurement (issue 33 item 1: one adapter per source): InferenceMAX's
// client and server settings for the rows InferenceMAX measured
// (IMAXConfig), AIConfigurator's aiperf recipe for the others, whose
// pipeline publishes no settings of its own (AIPerfConfig). Neither
// derives anything from the model under test.
func Adapter(p Point) string {
	if IsIMAX(p) {
		return IMAXConfig(p)
	}
	return AIPerfConfig(p)
}

// Run predicts one point under its Adapter: the report's mean TTFT and
// TPOT. Every row's OSL is ≥ 2, so every measured request has a TPOT.
func Run(p Point) Result { return runYAML(p, Adapter(p)) }

// runYAML predicts p from the run config yaml (Config, IMAXConfig, AIPerfConfig).
func runYAML(p Point, yaml string) Result {
	res := Result{Point: p}
	rep, err := sim.Predict(withKernels(sim.Inputs{Config: []byte(yaml), ConfigName: p.ID + ".yaml"}), nil)
	if err != nil {
		res.Err = err
		return res
	}
	s := rep.Summary
	if s[schema.CompletedRequests] == 0 {
		res.Err = fmt.Errorf("no request completed after the warm-up")
		return res
	}
	res.PredTTFTMs, res.PredTPOTMs = s[schema.TTFT.Key(schema.Mean)], s[schema.TPOT.Key(schema.Mean)]
	return res
}

// RunAll predicts every point with its Adapter on all cores; results keep
// the points' order.
func RunAll(points []Point) []Result { return runAll(points, Adapter) }

// runAll predicts every point from the config cfg gives it.
func runAll(points []Point, cfg func(Point) string) []Result {
	out := make([]Result, len(points))
	forEach(len(points), func(i int) { out[i] = runYAML(points[i], cfg(points[i])) })
	return out
}

// forEach calls f(0) … f(n−1) on all cores and returns when all are done.
// Each f(i) writes only its own i's result, so the outcome is the same
// whatever the order: replays are deterministic and share nothing.
func forEach(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
