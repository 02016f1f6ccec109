package validation

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/workload"
)

// TestItem33_1AIPerfConfig: the aiperf replay is AIConfigurator's
// generator recipe (bench_run.sh.j2 @ 095f58a5): every client at once,
// 20 × concurrency requests, fixed ISL and OSL, nothing left out (aiperf
// drains its warm-up before the profiling phase), and the engine's
// defaults for the row's version and GPU (ServerConfig).
func TestItem33_1AIPerfConfig(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     Point
		chunk int // max_batched_tokens: vLLM's and TRT-LLM's 8192, SGLang's chunked_prefill_size
	}{
		{"vllm h100 qwen3 c64", Point{Backend: "vllm", Version: "0.12.0", Model: "qwen3-32b", GPU: "h100_sxm", DType: "bf16", TP: 2, ISL: 4096, OSL: 512, Concurrency: 64}, 8192},
		{"sglang h200 llama 8b c1", Point{Backend: "sglang", Version: "0.5.6.post2", Model: "llama-3.1-8b", GPU: "h200_sxm", DType: "bf16", TP: 1, ISL: 1024, OSL: 128, Concurrency: 1}, 8192},
		{"trtllm b200 fp4 c256", Point{Backend: "trtllm", Version: "1.3.0rc5", Model: "qwen3-32b", GPU: "b200", DType: "fp4", TP: 1, ISL: 8192, OSL: 1024, Concurrency: 256}, 8192},
	} {
		c.p.ID = "row"
		got, err := config.Parse("aiperf.yaml", []byte(AIPerfConfig(c.p)), nil)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		tr, w := got.Traffic, got.Engine.Workers.Aggregated
		for _, f := range []struct {
			what      string
			got, want any
		}{
			{"load", tr.Load.Type, "concurrency"},
			{"concurrency", tr.Load.Concurrency, c.p.Concurrency},
			{"ramp (all clients at once)", tr.Load.RampUpSeconds, 0.0},
			{"requests", tr.Stop.Requests, 20 * c.p.Concurrency},
			{"warm-up (drained before profiling)", tr.Warmup.On(), false},
			{"input_tokens", tr.Source.InputTokens.Length(), workload.Fixed(c.p.ISL)},
			{"output_tokens", tr.Source.OutputTokens.Length(), workload.Fixed(c.p.OSL)},
			{"backend", got.Engine.Backend, c.p.Backend},
			{"tensor", w.Parallelism.Tensor, c.p.TP},
			{"max_batched_tokens", w.Scheduler.MaxBatchedTokens, c.chunk},
			{"async_scheduling (vLLM from 0.14, the others always)", w.Scheduler.AsyncScheduling, c.p.Backend != "vllm"},
			{"prefix caching", w.KVCache.PrefixCaching, false},
		} {
			if !reflect.DeepEqual(f.got, f.want) {
				t.Errorf("%s: %s = %v, want %v", c.name, f.what, f.got, f.want)
			}
		}
	}
}

// TestItem33_1AIPerfPoints: the recipe replays exactly the rows that are
// not InferenceMAX's (602), all held out; the source is reported, not gated.
func TestItem33_1AIPerfPoints(t *testing.T) {
	pts, err := AIPerfPoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 602 {
		t.Errorf("%d rows, want 602", len(pts))
	}
	rs := make([]Result, len(pts))
	for i, p := range pts {
		if IsIMAX(p) || Fit(p) {
			t.Errorf("%s: an InferenceMAX or fitted row", p.ID)
		}
		rs[i] = Result{Point: p, PredTTFTMs: p.TTFTMs, PredTPOTMs: p.TPOTMs * 1.1}
	}
	s := aiperfSource(rs)
	if s.Gate != "" || len(s.heldOut()) != len(pts) || !strings.Contains(s.About, "bench_run.sh.j2") {
		t.Errorf("gate %q, %d of %d held out, about %q", s.Gate, len(s.heldOut()), len(pts), s.About)
	}
	if e := errorsOf(s.points); math.Abs(*e.MedianAbsError.TPOT-10) > 1e-9 || *e.MedianAbsError.TTFT != 0 {
		t.Errorf("median TPOT %v %%, TTFT %v %%, want 10 and 0", *e.MedianAbsError.TPOT, *e.MedianAbsError.TTFT)
	}
}

// TestItem33_1MLPerfParse: the vendored LoadGen summaries and accuracy
// runs read as published (mlcommons/inference_results_v4.1 @ 198fc467),
// and a broken file names what is missing.
func TestItem33_1MLPerfParse(t *testing.T) {
	runs, err := MLPerfRuns()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][7]float64{ // target QPS, tokens/s, TTFT p99, TPOT p99 (ms), output mean, groups, TP
		"DGX-H100_H100-SXM-80GBx8_TRT": {75, 21605.79, 461.278089, 175.354317, 7134869.0 / 24576, 4, 2},
		"H200-SXM-141GBx8_TRT":         {101, 29228.22, 452.744202, 146.040006, 7157992.0 / 24576, 8, 1},
	}
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(runs), len(want))
	}
	for _, r := range runs {
		w, ok := want[r.System]
		got := [7]float64{r.TargetQPS, r.TokensPerSec, r.TTFTP99Ms, r.TPOTP99Ms, r.OutputMean, float64(r.Groups), float64(r.TP)}
		for i := range w {
			if !ok || math.Abs(got[i]-w[i]) > 1e-6*w[i] {
				t.Errorf("%s: figure %d = %v, want %v", r.System, i, got[i], w[i])
			}
		}
		if !r.Valid || r.TTFTLimitMs != 2000 || r.TPOTLimitMs != 200 || r.MinDurationS != 2400 {
			t.Errorf("%s: valid %v, bounds %v/%v ms, min duration %v s", r.System, r.Valid, r.TTFTLimitMs, r.TPOTLimitMs, r.MinDurationS)
		}
	}
	sum, _ := mlperfFiles.ReadFile("testdata/mlperf/H200-SXM-141GBx8_TRT/mlperf_log_summary.txt")
	acc, _ := mlperfFiles.ReadFile("testdata/mlperf/H200-SXM-141GBx8_TRT/accuracy.txt")
	for _, c := range []struct {
		name     string
		sum, acc string
		want     string
	}{
		{"no target_qps", strings.Replace(string(sum), "target_qps", "qps", 1), string(acc), `mlperf_log_summary.txt: target_qps: want a number > 0, got ""`},
		{"no token count", string(sum), strings.Replace(string(acc), "gen_tok_len", "len", 1), "accuracy.txt: no gen_tok_len and gen_num"},
	} {
		if _, err := parseMLPerf(mlperfSystems[1], []byte(c.sum), []byte(c.acc)); err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// TestItem33_1MLPerfConfig: one TP group replayed with Poisson arrivals at
// its share of the target QPS for LoadGen's min_duration, with the
// submission's TensorRT-LLM settings; the Llama-2-70B config is accepted.
func TestItem33_1MLPerfConfig(t *testing.T) {
	runs, err := MLPerfRuns()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		for _, prompt := range []string{mlperfPrompt, "256"} {
			cfg, err := config.Parse("mlperf.yaml", []byte(MLPerfConfig(r, prompt)), nil)
			if err != nil {
				t.Errorf("%s: %v", r.System, err)
				continue
			}
			tr, w := cfg.Traffic, cfg.Engine.Workers.Aggregated
			in := workload.Length{Dist: "uniform", Min: 1, Max: 1023}
			if prompt != mlperfPrompt {
				in = workload.Fixed(256)
			}
			for _, f := range []struct {
				what      string
				got, want any
			}{
				{"load", tr.Load.Type, "poisson"},
				{"rate", tr.Load.RequestsPerSecond, r.TargetQPS / float64(r.Groups)},
				{"requests", tr.Stop.Requests, int(math.Ceil(r.TargetQPS / float64(r.Groups) * 2400))},
				{"warm-up", tr.Warmup.On(), false},
				{"input_tokens", tr.Source.InputTokens.Length(), in},
				{"output_tokens", tr.Source.OutputTokens.Length(), workload.Fixed(int(math.Round(r.OutputMean)))},
				{"backend", cfg.Engine.Backend, "trtllm"},
				{"dtype", cfg.Engine.DType, "fp8"},
				{"tensor", w.Parallelism.Tensor, r.TP},
				{"max_sequences", w.Scheduler.MaxSequences, r.MaxBatch},
				{"max_batched_tokens", w.Scheduler.MaxBatchedTokens, 4096},
				{"chunked_prefill", w.Scheduler.ChunkedPrefill, false},
				{"async_scheduling", w.Scheduler.AsyncScheduling, false},
				{"kv dtype", w.KVCache.DType, "fp8"},
			} {
				if !reflect.DeepEqual(f.got, f.want) {
					t.Errorf("%s %s: %s = %v, want %v", r.System, prompt, f.what, f.got, f.want)
				}
			}
		}
	}
}

// TestItem33_1ReportedJSON: both new sources print in `dynosim validate
// --format json` as reported, not gated, every point held out; the MLPerf
// doc table states the bounds' verdict and the prompt-length sweep.
func TestItem33_1ReportedJSON(t *testing.T) {
	runs, err := MLPerfRuns()
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		r := &runs[i]
		r.Pred = MLPerfPred{TTFTMeanMs: 2 * r.TTFTMeanMs, TTFTP99Ms: 2500, TPOTMeanMs: r.TPOTMeanMs, TPOTP99Ms: 150, E2EMeanMs: r.E2EMeanMs, TokensPerSec: r.TokensPerSec}
		for range mlperfPromptLens {
			r.Sweep = append(r.Sweep, MLPerfPred{TTFTP99Ms: 300, TPOTP99Ms: 150})
		}
	}
	pts, err := AIPerfPoints()
	if err != nil {
		t.Fatal(err)
	}
	rs := []Result{{Point: pts[0], PredTTFTMs: pts[0].TTFTMs, PredTPOTMs: pts[0].TPOTMs}}
	js, err := JSON([]Source{aiperfSource(rs), mlperfSource(runs)})
	if err != nil {
		t.Fatal(err)
	}
	var v ValidationJSON
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name         string
		points       int
		ttft, tpotPc float64
	}{{AIPerfSource, 1, 0, 0}, {MLPerfSource, 2, 100, 0}} {
		s := v.Sources[i]
		if s.Name != c.name || s.Gated || s.Points != c.points || s.HeldOut.Points != c.points ||
			math.Abs(*s.MedianAbsError.TTFT-c.ttft) > 1e-9 || math.Abs(*s.MedianAbsError.TPOT-c.tpotPc) > 1e-9 {
			t.Errorf("source %d: %+v", i, s)
		}
	}
	about := mlperfSource(runs).About
	for _, want := range []string{"| DGX-H100_H100-SXM-80GBx8_TRT | TP2 × 4 | 75 |", "yes / no |", "| H200-SXM-141GBx8_TRT | 512 | 300 | 150.0 |", "not public"} {
		if !strings.Contains(about, want) {
			t.Errorf("the MLPerf section lacks %q:\n%s", want, about)
		}
	}
}
