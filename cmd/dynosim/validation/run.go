package validation

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing"
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

// requests is how many requests a point replays: the first of each client
// is left out as warm-up (traffic.warmup: it starts on the ramp), four
// more waves follow.
func requests(c int) int { return max(5*c, 40) }

// Config is the YAML of the run that stands for p. Knobs the measurement
// does not state take the engine's defaults for that version and GPU
// class (docs/validation.md lists them).
func Config(p Point) string {
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
	return fmt.Sprintf(`traffic:
  source: {type: synthetic, input_tokens: %d, output_tokens: %d}
  load: {type: concurrency, concurrency: %d, ramp_up_seconds: %.4f}
  stop: {requests: %d}
  warmup: {requests: %d}
engine:
  backend: %s
  model: %s
  hardware: %s
  dtype: %s
  workers:
    aggregated:
      parallelism: {tensor: %d}
      scheduler: %s%s
      kv_cache: {prefix_caching: false, dtype: %s, capacity: %s}
`, p.ISL, p.OSL, p.Concurrency, rampUp(p), requests(p.Concurrency), p.Concurrency, p.Backend, p.Model, p.GPU, p.DType, p.TP, sched, extra, kvDType(p), capacity)
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

// rampUp spreads the clients' starts over one request's expected life (a
// prefill plus OSL decode steps at full concurrency, from the roofline),
// so the replay measures the desynchronised steady state of a long
// benchmark rather than one synchronised wave replayed forever (identical
// requests that start together stay in lockstep in a simulator; on real
// servers jitter spreads them). The choice was made on the fitted points:
// median TTFT error 53 % with the ramp, 96 % with all clients together.
func rampUp(p Point) float64 {
	r, err := timing.NewRoofline(timing.RooflineSpec{Model: p.Model, Hardware: p.GPU, DType: p.DType, Parallelism: timing.Parallelism{Tensor: p.TP}, Engine: p.Backend})
	if err != nil {
		return 0 // the run reports the same error
	}
	c, ctx := p.Concurrency, p.ISL+p.OSL/2
	return (r.PrefillMs(1, p.ISL, 0) + float64(p.OSL)*r.DecodeMs(c, c*ctx, ctx, 0)) / 1000
}

// Adapter is the replay of p with its own pipeline's published protocol
// (issue 33 item 1: one adapter per source): InferenceMAX's client and
// server settings for the rows InferenceMAX measured (IMAXConfig), the
// harness's protocol (Config) for the rows whose pipeline publishes none.
func Adapter(p Point) string {
	if IsIMAX(p) {
		return IMAXConfig(p)
	}
	return Config(p)
}

// Run predicts one point: the report's mean TTFT and TPOT (under Config,
// which leaves out each client's first request: the warm-up, started on
// the ramp, in a closed loop the first Concurrency requests released).
// Every row's OSL is ≥ 2, so every measured request has a TPOT.
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
