package validation

import (
	"fmt"
	"runtime"
	"sync"

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

// requests is how many requests a point replays: all clients start
// together, as a benchmark client's do, and the first request of each is
// left out as warm-up; four more waves follow.
func requests(c int) int { return max(5*c, 40) }

// Config is the YAML of the run that stands for p. Knobs the measurement
// does not state take the engine's defaults for that version and GPU
// class (docs/validation.md lists them).
func Config(p Point) string {
	sched := fmt.Sprintf("{max_batched_tokens: %d, max_sequences: %d}", 8192, 1024) // vLLM V1 on ≥ 70 GiB GPUs
	extra := ""
	switch p.Backend {
	case "sglang":
		// SGLang's server_args: chunked_prefill_size 8192 below 160 GB of
		// GPU memory, 16384 above; max_running_requests from memory.
		chunk := 8192
		if p.GPU == "b200" {
			chunk = 16384
		}
		sched = fmt.Sprintf("{max_batched_tokens: %d, max_sequences: 0}", chunk)
		extra = fmt.Sprintf("\n      sglang: {chunked_prefill_size: %d, max_prefill_tokens: 16384}", chunk)
	case "trtllm":
		sched = "{max_batched_tokens: 8192, max_sequences: 2048}" // trtllm-serve defaults
	}
	return fmt.Sprintf(`traffic:
  source: {type: synthetic, input_tokens: %d, output_tokens: %d}
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
      scheduler: %s%s
      kv_cache: {prefix_caching: false, dtype: %s, capacity: {type: default, memory_fraction: 0.9}}
`, p.ISL, p.OSL, p.Concurrency, requests(p.Concurrency), p.Backend, p.Model, p.GPU, p.DType, p.TP, sched, extra, kvDType(p))
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

// Run predicts one point: the means over the requests after each
// client's first (the warm-up, started on the ramp).
func Run(p Point) Result {
	res := Result{Point: p}
	rep, err := sim.Predict(sim.Inputs{Config: []byte(Config(p)), ConfigName: p.ID + ".yaml", CapturePerRequest: true}, nil)
	if err != nil {
		res.Err = err
		return res
	}
	var ttft, tpot float64
	n := 0
	for _, r := range rep.Requests()[min(p.Concurrency, len(rep.Requests())):] {
		if r.TTFTMs == nil || r.LastTokenMs == nil || r.FirstTokenMs == nil || r.OutputLength < 2 {
			continue
		}
		ttft += *r.TTFTMs
		tpot += (*r.LastTokenMs - *r.FirstTokenMs) / float64(r.OutputLength-1)
		n++
	}
	if n == 0 {
		res.Err = fmt.Errorf("no request completed after the warm-up")
		return res
	}
	res.PredTTFTMs, res.PredTPOTMs = ttft/float64(n), tpot/float64(n)
	return res
}

// RunAll predicts every point on all cores; results keep the points' order.
func RunAll(points []Point) []Result {
	out := make([]Result, len(points))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				out[i] = Run(points[i])
			}
		})
	}
	for i := range points {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
