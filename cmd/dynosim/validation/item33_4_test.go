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
	refit   = flag.Bool("fit", false, "TestItem33_4Fit: refit the tensor-parallel sync term (replays the fitted split once per candidate)")
	fitStep = flag.Float64("fitstep", 0.5, "TestItem33_4Fit: grid step, µs")
	fitMax  = flag.Float64("fitmax", 6, "TestItem33_4Fit: grid end, µs")
)

// TestItem33_4Split: the fitted split is H100 and B200 FP8, both
// engines; H200 and B200 FP4 are held out, and both parts hold TP2–TP8
// rows of both engines on both NVLink fabrics.
func TestItem33_4Split(t *testing.T) {
	for _, c := range []struct {
		gpu, dtype string
		fit        bool
	}{
		{"h100_sxm", "fp8", true}, {"b200", "fp8", true},
		{"h200_sxm", "fp8", false}, {"b200", "fp4", false},
	} {
		if got := imaxFit(Point{GPU: c.gpu, DType: c.dtype}); got != c.fit {
			t.Errorf("%s %s: fitted = %v, want %v", c.gpu, c.dtype, got, c.fit)
		}
	}
	pts, err := IMAXPoints()
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		fit            bool
		fabric, engine string
		tp             int
	}
	n := map[key]int{}
	for _, p := range pts {
		f, _ := timing.LookupGPU(p.GPU)
		n[key{imaxFit(p), f.Fabric.String(), p.Backend, p.TP}]++
	}
	for _, fit := range []bool{true, false} {
		for _, e := range []string{"vllm", "trtllm"} {
			for _, tp := range []int{2, 4, 8} {
				got := n[key{fit, "nvlink4", e, tp}] + n[key{fit, "nvlink5", e, tp}]
				if got == 0 {
					t.Errorf("fitted=%v: no %s TP%d row", fit, e, tp)
				}
			}
		}
		if n[key{fit, "nvlink4", "vllm", 2}] == 0 || n[key{fit, "nvlink5", "vllm", 2}] == 0 {
			t.Errorf("fitted=%v: a fabric without rows", fit)
		}
	}
}

// fitFabrics are the fabrics InferenceMAX's sweep covers.
var fitFabrics = []timing.Fabric{timing.FabricNVLink4, timing.FabricNVLink5}

// syncEval replays pts with every fitted fabric's term set to us (µs per
// log2 TP) and returns, per fabric, the scored points.
func syncEval(pts []Point, us float64) map[timing.Fabric][]Result {
	old := map[timing.Fabric]timing.TPSync{}
	for _, f := range fitFabrics {
		old[f] = timing.SetTPSync(f, timing.TPSync{PerLog2Us: us})
	}
	defer func() {
		for f, s := range old {
			timing.SetTPSync(f, s)
		}
	}()
	out := map[timing.Fabric][]Result{}
	for _, r := range runAll(pts, IMAXConfig) {
		if r.Err != nil {
			continue
		}
		g, _ := timing.LookupGPU(r.GPU)
		out[g.Fabric] = append(out[g.Fabric], r)
	}
	return out
}

// medianOf is the median of f over rs, in percent.
func medianOf(rs []Result, f func(Result) float64) float64 {
	xs := make([]float64, 0, len(rs))
	for _, r := range rs {
		xs = append(xs, f(r))
	}
	return 100 * quantile(xs, 0.5)
}

// TestItem33_4Fit refits timing/tpsync.go's NVLink4 and NVLink5 terms on
// InferenceMAX's fitted split only (imaxFit), TP > 1: per fabric, the µs
// per collective per log2(TP) that minimises tpSpread, the TP dependence
// of the TPOT error, on a 0.5 µs grid from 0 to 6 µs (-fitstep,
// -fitmax). It logs every candidate's objective beside the median
// |TPOT| and |TTFT| errors and the signed TPOT error per TP. Opt-in (it
// replays 144 points per candidate, ~15 s each):
//
//	go test ./cmd/dynosim/validation -run TestItem33_4Fit -fit -v
func TestItem33_4Fit(t *testing.T) {
	if !*refit {
		t.Skip("pass -fit to refit the tensor-parallel sync term")
	}
	all, err := IMAXPoints()
	if err != nil {
		t.Fatal(err)
	}
	var pts []Point
	for _, p := range all {
		if imaxFit(p) && p.TP > 1 {
			pts = append(pts, p)
		}
	}
	best := map[timing.Fabric][2]float64{} // µs, objective
	for us := 0.0; us <= *fitMax; us += *fitStep {
		for f, rs := range syncEval(pts, us) {
			obj := tpSpread(rs)
			line := fmt.Sprintf("%s %4.2f µs/log2(tp): %d points, TP spread %.2f %%², median |TPOT error| %.2f %%, signed by TP:",
				f, us, len(rs), obj, medianOf(rs, func(r Result) float64 { return math.Abs(r.TPOTErr()) }))
			for _, tp := range []int{2, 4, 8} {
				sub := slices.DeleteFunc(slices.Clone(rs), func(r Result) bool { return r.TP != tp })
				line += fmt.Sprintf(" TP%d %+.1f %%", tp, medianOf(sub, Result.TPOTErr))
			}
			line += fmt.Sprintf("; median |TTFT error| %.2f %%", medianOf(rs, func(r Result) float64 { return math.Abs(r.TTFTErr()) }))
			t.Log(line)
			if b, ok := best[f]; !ok || obj < b[1] {
				best[f] = [2]float64{us, obj}
			}
		}
	}
	for _, f := range fitFabrics {
		t.Logf("fit: %s PerLog2Us %.2f (TP spread %.2f %%² on the fitted split, TP > 1; timing/tpsync.go has %.2f)",
			f, best[f][0], best[f][1], timing.TPSyncMs(f, 2)*1000)
		if math.Abs(best[f][0]-timing.TPSyncMs(f, 2)*1000) > 1e-9 {
			t.Errorf("%s: the fit moved; put PerLog2Us %.2f in timing/tpsync.go and regenerate docs/validation.md", f, best[f][0])
		}
	}
}

// tpSpread is the TP dependence left in rs's TPOT errors (spread):
// per configuration (GPU, engine, dtype), across TP sizes. The engine's
// and GPU's own offsets cancel; what remains is what a per-collective
// term can change.
func tpSpread(rs []Result) float64 {
	return spread(rs, func(r Result) [3]string { return [3]string{r.GPU, r.Backend, r.DType} }, func(r Result) int { return r.TP })
}

// spread is what of rs's TPOT error varies with level within a group:
// per group, the median signed error at each level, and the sum over
// groups of the squared deviations of those medians from their mean
// (percent²). Groups and levels are taken in first-seen order, so the
// float sums come out the same on every run.
func spread[K comparable](rs []Result, group func(Result) K, level func(Result) int) float64 {
	type cell struct {
		group K
		level int
	}
	at := map[cell]int{}
	var cells []cell
	var subs [][]Result
	for _, r := range rs {
		c := cell{group(r), level(r)}
		i, ok := at[c]
		if !ok {
			i = len(cells)
			at[c] = i
			cells, subs = append(cells, c), append(subs, nil)
		}
		subs[i] = append(subs[i], r)
	}
	of := map[K]int{}
	var medians [][]float64 // per group, per level
	for i, c := range cells {
		g, ok := of[c.group]
		if !ok {
			g = len(medians)
			of[c.group] = g
			medians = append(medians, nil)
		}
		medians[g] = append(medians[g], medianOf(subs[i], Result.TPOTErr))
	}
	var ss float64
	for _, ms := range medians {
		var mean float64
		for _, m := range ms {
			mean += m / float64(len(ms))
		}
		for _, m := range ms {
			ss += (m - mean) * (m - mean)
		}
	}
	return ss
}

// TestItem33_4Spread: the fits' objective keeps what varies with the level
// and cancels each group's own offset, whatever the order of the points.
func TestItem33_4Spread(t *testing.T) {
	res := func(gpu string, tp int, errPct float64) Result {
		r := Result{PredTPOTMs: 10 * (1 + errPct/100)}
		r.GPU, r.TP, r.TPOTMs = gpu, tp, 10
		return r
	}
	rs := []Result{
		res("h100_sxm", 2, -2), res("h100_sxm", 4, 0), res("h100_sxm", 8, 2), // medians −2, 0, +2: 8 %²
		res("b200", 2, 30), res("b200", 4, 30), res("b200", 4, 30), // one offset, no TP slope: 0
		res("h200_sxm", 2, 2), res("h200_sxm", 8, 0), // medians 2 and 0: 2 %²
	}
	for i := range 3 {
		if got := tpSpread(rs); math.Abs(got-10) > 1e-9 {
			t.Fatalf("order %d: spread %v %%², want 10", i, got)
		}
		slices.Reverse(rs)
		rs = append(rs[1:], rs[0])
	}
}
