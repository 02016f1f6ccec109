package validation

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

var (
	refitSeq   = flag.Bool("fitseq", false, "TestItem33_8PerSeqFit: refit vLLM's and TRT-LLM's per-sequence overhead (replays the fitted split once per candidate)")
	fitSeqStep = flag.Float64("fitseqstep", 5, "TestItem33_8PerSeqFit: grid step, µs")
	fitSeqMax  = flag.Float64("fitseqmax", 40, "TestItem33_8PerSeqFit: grid end, µs")
)

// seqFitEngines are the engines InferenceMAX's fitted split measures;
// seqFitted are those whose fitted value timing/overhead.go takes (its
// comment says why TRT-LLM's is logged, not taken).
var (
	seqFitEngines = []string{"vllm", "trtllm"}
	seqFitted     = map[string]bool{"vllm": true}
)

// TestItem33_8PerSeqFit refits timing/overhead.go's PerSeqMs of vLLM (and
// logs TRT-LLM's) on InferenceMAX's fitted split only (imaxFit: H100 vLLM, B200
// FP8 vLLM and TRT-LLM, TP1–TP8, concurrency 4–128): per engine, the µs
// per sequence in a pass that minimises concSpread, the dependence of the
// TPOT error on the batch, on a 5 µs grid from 0 to 40 µs (-fitseqstep,
// -fitseqmax). It logs each candidate's objective beside the median
// |TPOT| and signed TPOT error and the signed error per concurrency.
// Issue 33's must-show "every gated source TPOT ≤ 8 %" (no scope item of
// its own: numbered after the seven). Opt-in (177 replays per candidate):
//
//	go test ./cmd/dynosim/validation -run TestItem33_8PerSeqFit -fitseq -v
func TestItem33_8PerSeqFit(t *testing.T) {
	if !*refitSeq {
		t.Skip("pass -fitseq to refit the per-sequence overhead")
	}
	all, err := IMAXPoints()
	if err != nil {
		t.Fatal(err)
	}
	pts := slices.DeleteFunc(all, func(p Point) bool { return !imaxFit(p) })
	committed := map[string]float64{}
	for _, e := range seqFitEngines {
		o, _ := timing.EngineOverhead(e)
		committed[e] = o.PerSeqMs * 1000
	}
	defer func() {
		for e, us := range committed {
			timing.SetPerSeqMs(e, us/1000)
		}
	}()
	best := map[string][2]float64{} // µs, objective
	for us := 0.0; us <= *fitSeqMax+1e-9; us += *fitSeqStep {
		for _, e := range seqFitEngines {
			timing.SetPerSeqMs(e, us/1000)
		}
		by := map[string][]Result{}
		for _, r := range runAll(pts, IMAXConfig) {
			if r.Err == nil {
				by[r.Backend] = append(by[r.Backend], r)
			}
		}
		for _, e := range seqFitEngines {
			rs := by[e]
			obj := concSpread(rs)
			line := fmt.Sprintf("%s %4.1f µs/seq: %d points, concurrency spread %.0f %%², median |TPOT error| %.2f %%, signed %+.2f %%; signed by concurrency:",
				e, us, len(rs), obj, medianOf(rs, func(r Result) float64 { return math.Abs(r.TPOTErr()) }), medianOf(rs, Result.TPOTErr))
			for _, c := range []int{4, 8, 16, 32, 64, 128} {
				if sub := slices.DeleteFunc(slices.Clone(rs), func(r Result) bool { return r.Concurrency != c }); len(sub) > 0 {
					line += fmt.Sprintf(" c%d %+.1f", c, medianOf(sub, Result.TPOTErr))
				}
			}
			t.Log(line)
			if b, ok := best[e]; !ok || obj < b[1] {
				best[e] = [2]float64{us, obj}
			}
		}
	}
	for _, e := range seqFitEngines {
		t.Logf("fit: %s PerSeqMs %.1f µs (concurrency spread %.0f %%² on the fitted split; timing/overhead.go has %.1f, taken: %v)", e, best[e][0], best[e][1], committed[e], seqFitted[e])
		if seqFitted[e] && math.Abs(best[e][0]-committed[e]) > 1e-6 {
			t.Errorf("%s: the fit moved; put PerSeqMs %.1f µs in timing/overhead.go, rerun TestItem33_4Fit -fit and regenerate docs/validation.md", e, best[e][0])
		}
	}
}

// concSpread is the batch dependence left in rs's TPOT errors (spread):
// per configuration (GPU, engine, dtype, TP, ISL/OSL), across
// concurrency levels. The configuration's own offset cancels; what
// remains is what a cost per sequence in the batch can change.
func concSpread(rs []Result) float64 {
	type cfg struct {
		gpu, engine, dtype string
		tp, isl, osl       int
	}
	return spread(rs, func(r Result) cfg { return cfg{r.GPU, r.Backend, r.DType, r.TP, r.ISL, r.OSL} }, func(r Result) int { return r.Concurrency })
}

// TestItem33_8FrontendFit refits timing/overhead.go's FrontendMs as its
// comment defines it: the mean of measured − predicted TTFT over BLIS's
// fitted runs (blisFit: the two Llama-3.1-70B runs), the prediction taken
// without the frontend (predicted − FrontendMs; the frontend delays each
// request's arrival at the engine by that constant). Rerun it after any
// change of the roofline or the overheads (opt-in with -fitseq):
//
//	go test ./cmd/dynosim/validation -run TestItem33_8FrontendFit -fitseq -v
func TestItem33_8FrontendFit(t *testing.T) {
	if !*refitSeq {
		t.Skip("pass -fitseq to refit the frontend latency")
	}
	runs, err := BLISRuns()
	if err != nil {
		t.Fatal(err)
	}
	o, _ := timing.EngineOverhead("vllm")
	var sum float64
	var n int
	for _, r := range runs {
		if !blisFit(r) {
			continue
		}
		res := RunBLIS(r)
		if res.Err != nil || res.Measured == nil {
			t.Fatalf("run %s: %v", r.ID, res.Err)
		}
		resid := res.Measured.TTFT - (res.Pred.TTFT - o.FrontendMs)
		t.Logf("run %s: measured TTFT %.2f ms, predicted %.2f ms, measured − predicted without the frontend %.2f ms", r.ID, res.Measured.TTFT, res.Pred.TTFT, resid)
		sum += resid
		n++
	}
	fit := math.Round(10*sum/float64(n)) / 10
	t.Logf("fit: FrontendMs %.1f ms over %d runs (timing/overhead.go has %.1f)", fit, n, o.FrontendMs)
	if n != 2 || math.Abs(fit-o.FrontendMs) > 1e-9 {
		t.Errorf("the fit moved; put frontendMs %.1f in timing/overhead.go and regenerate docs/validation.md", fit)
	}
}
