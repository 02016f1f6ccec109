package validation

import (
	"fmt"
	"github.com/dynosim/dynosim-web/timing"
	"math"
	"slices"
	"strings"
)

// Fit reports whether a point belongs to the set the timing model's fitted
// constants were chosen on. Held out: every other point. The split is by
// model: Llama-3.1-70B (AIConfigurator's InferenceMAX-grid file) is fitted,
// Llama-3.1-8B and Qwen3-32B (other teams' runs, other engines and
// versions) are not.
func Fit(p Point) bool { return p.Model == "llama-3.1-70b" }

// stats are the absolute relative errors of a set of results.
type stats struct {
	n                          int
	ttftMed, ttftP90           float64
	tpotMed, tpotP90           float64
	ttftSignedMed, tpotSignMed float64
}

func summarize(rs []Result) stats {
	var at, ap, st, sp []float64
	for _, r := range rs {
		if r.Err != nil {
			continue
		}
		at, ap = append(at, math.Abs(r.TTFTErr())), append(ap, math.Abs(r.TPOTErr()))
		st, sp = append(st, r.TTFTErr()), append(sp, r.TPOTErr())
	}
	return stats{n: len(at), ttftMed: quantile(at, 0.5), ttftP90: quantile(at, 0.9),
		tpotMed: quantile(ap, 0.5), tpotP90: quantile(ap, 0.9),
		ttftSignedMed: quantile(st, 0.5), tpotSignMed: quantile(sp, 0.5)}
}

// quantile is the nearest-rank quantile (NaN for none).
func quantile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	x = slices.Clone(x)
	slices.Sort(x)
	return x[max(0, int(math.Ceil(q*float64(len(x))))-1)]
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func signed(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

// Markdown renders docs/validation.md from the AIConfigurator results,
// the BLIS runs and the sources they make.
func Markdown(rs []Result, blis []BLISResult, srcs []Source) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", docHead)
	if kernelsMode != "default" { // docs/validation.md is the default timing's (kernels.go)
		fmt.Fprintf(&b, "\n**Kernel timing: `timing.kernels: %s`** (`dynosim validate --kernels %[1]s`), not the default timing.\n", kernelsMode)
	}
	sourcesMarkdown(&b, srcs)
	summaryTable(&b, rs)
	groupTable(&b, rs)
	if len(blis) > 0 {
		fmt.Fprintf(&b, "\n%s", blisMarkdown(blis))
	}
	pointsTable(&b, rs)
	return b.String()
}

// summaryTable writes the error summary of the held-out, fitted and all
// points, per GPU family and over all of them.
func summaryTable(b *strings.Builder, rs []Result) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	var fit, held []Result
	for _, r := range rs {
		if Fit(r.Point) {
			fit = append(fit, r)
		} else {
			held = append(held, r)
		}
	}
	w("## Summary: fixed-concurrency points (AIConfigurator silicon_sample.csv, each row under its source's protocol)\n\n")
	w("| set | GPU family | points | TTFT median abs. error | TTFT p90 | TTFT median signed | TPOT median abs. error | TPOT p90 | TPOT median signed |\n")
	w("| --- | --- | --: | --: | --: | --: | --: | --: | --: |\n")
	row := func(set, fam string, rs []Result) {
		s := summarize(rs)
		w("| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", set, fam, s.n, pct(s.ttftMed), pct(s.ttftP90), signed(s.ttftSignedMed), pct(s.tpotMed), pct(s.tpotP90), signed(s.tpotSignMed))
	}
	for _, set := range []struct {
		name string
		rs   []Result
	}{{"held out", held}, {"fitted", fit}, {"all", rs}} {
		fams := map[string][]Result{}
		var names []string
		for _, r := range set.rs {
			f := timing.Family(r.GPU)
			if fams[f] == nil {
				names = append(names, f)
			}
			fams[f] = append(fams[f], r)
		}
		slices.Sort(names)
		for _, f := range names {
			row(set.name, f, fams[f])
		}
		row(set.name, "**all**", set.rs)
	}
}

// groupTable writes the errors per GPU × model × engine × TP group.
func groupTable(b *strings.Builder, rs []Result) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("\n## By GPU × model × engine × TP\n\n")
	w("Errors are predicted/measured − 1 over the group's points (median of the absolute value, and median signed).\n\n")
	w("| GPU | model | engine | dtype | TP | set | points | TTFT median abs. | TTFT signed | TPOT median abs. | TPOT signed |\n")
	w("| --- | --- | --- | --- | --: | --- | --: | --: | --: | --: | --: |\n")
	groups := map[string][]Result{}
	var keys []string
	for _, r := range rs {
		k := r.Group()
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := groups[k]
		p := g[0].Point
		set := "held out"
		if Fit(p) {
			set = "fitted"
		}
		s := summarize(g)
		w("| %s | %s | %s %s | %s | %d | %s | %d | %s | %s | %s | %s |\n", p.GPU, p.Model, p.Backend, p.Version, p.DType, p.TP, set, s.n, pct(s.ttftMed), signed(s.ttftSignedMed), pct(s.tpotMed), signed(s.tpotSignMed))
	}
}

// pointsTable writes every point's measured and predicted means, folded.
func pointsTable(b *strings.Builder, rs []Result) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("\n## Every point\n\n")
	w("<details><summary>%d points (measured vs predicted mean TTFT and TPOT, ms)</summary>\n\n", len(rs))
	w("| id | ISL×OSL | conc. | TTFT meas. | TTFT pred. | error | TPOT meas. | TPOT pred. | error |\n")
	w("| --- | --- | --: | --: | --: | --: | --: | --: | --: |\n")
	for _, r := range rs {
		if r.Err != nil {
			w("| %s | %d×%d | %d | %.1f | error: %s | | %.2f | | |\n", r.ID, r.ISL, r.OSL, r.Concurrency, r.TTFTMs, strings.ReplaceAll(r.Err.Error(), "|", "/"), r.TPOTMs)
			continue
		}
		w("| %s | %d×%d | %d | %.1f | %.1f | %s | %.2f | %.2f | %s |\n", r.ID, r.ISL, r.OSL, r.Concurrency, r.TTFTMs, r.PredTTFTMs, signed(r.TTFTErr()), r.TPOTMs, r.PredTPOTMs, signed(r.TPOTErr()))
	}
	w("\n</details>\n")
}

const docHead = `# Timing validation against public end-to-end measurements

Generated by ` + "`go test ./cmd/dynosim/validation -run TestValidationDoc -update`" + ` (or ` + "`dynosim validate -o docs/validation.md`" + `);
the test fails when this file is stale. ` + "`dynosim validate --format json`" + ` prints the "By source" figures below as
` + "`{\"sources\": [{\"name\", \"points\", \"gated\", \"gate\", \"median_abs_error\": {\"tpot\", \"ttft\", \"e2e\"}, \"p90_abs_error\": {…}, \"by_gpu\": {family: {points, median_abs_error, p90_abs_error, \"by_engine\": {engine: …}}}, \"held_out\": {\"split\", points, median_abs_error, p90_abs_error, by_gpu}}]}`" + `:
percentages of |predicted/measured − 1| (null where a source measures no such figure); ` + "`held_out`" + ` is the
part of the source never looked at while fitting, and ` + "`gated`" + ` says whether ` + "`TestValidationDoc`" + ` holds the source to a
bar (` + "`gate`" + ` names it). The page's timing badge states the figures of the source closest to the run: same GPU
family and engine, then a gated source before a reported one (which the badge marks "not gated"), then the source whose protocol matches the run's load (fixed concurrency for
` + "`traffic.load.type: concurrency`" + `, open loop otherwise), or "not validated" with the reason (generated into
` + "`timing/validated.go`" + `). Every number below comes from replaying a public measurement
through the whole simulator (config → engine core → report) with ` + "`timing.type: default`" + `, the
model every prediction uses unless a profile is given.

**Data.** AIConfigurator's ` + "`silicon_sample.csv`" + ` (ai-dynamo/aiconfigurator @ 095f58a5, Apache-2.0): its
aggregated rows for the dense models our catalog prices (Llama-3.1-8B, Llama-3.1-70B, Qwen3-32B) on
H100, H200 and B200, vendored byte-identical in ` + "`cmd/dynosim/validation/testdata/`" + `. Each is a closed-loop run
at a fixed concurrency; we compare the measured mean TTFT and TPOT (` + "`silicon_ttft_ms`, `silicon_tpot_ms`" + `). The file
holds two pipelines' rows, and each is its own source (issue 33 item 1: one replay adapter per source, with the
source's published client and server settings, nothing derived from the model under test; ` + "`Adapter`" + ` in
` + "`cmd/dynosim/validation/run.go`" + `): the Llama-3.1-70B rows are SemiAnalysis InferenceMAX runs, replayed with
InferenceMAX's published settings and gated; the Llama-3.1-8B and Qwen3-32B rows come from a pipeline that publishes no
client settings, replayed with the aiperf recipe AIConfigurator publishes and reported, not gated. BLIS's 15 H100
open-loop runs are gated; NVIDIA's MLPerf Inference v4.1 Llama-2-70B Server results (mlcommons/inference_results_v4.1 @
198fc467, Apache-2.0) are reported, not gated, and stay out of the timing badge. Each source's section below says how
it is replayed. Where a row does not state a server knob, the engine's own default for that version and GPU is used:
vLLM V1 ` + "`max_num_batched_tokens` 8192, `max_num_seqs`" + ` 1024 (≥ 70 GiB GPUs), async scheduling from 0.14 on; SGLang
` + "`chunked_prefill_size`" + ` 8192 (16384 on B200), no request cap, overlap scheduler on; TRT-LLM
` + "`max_num_tokens` 8192, `max_batch_size`" + ` 2048, overlap scheduler on; KV cache 0.9 of memory (SGLang: its own ` + "`mem_fraction_static`" + ` default,
0.835 on an H100 at TP1), in the model dtype (FP8 for TRT-LLM's quantized checkpoints); no prefix reuse (random prompts).

**Fitted and held out.** Three choices were made on end-to-end data, all on Llama-3.1-70B only: the
frontend latency (` + "`timing/overhead.go`" + `: 3.7 ms, from BLIS's two Llama-3.1-70B runs, ` + "`TestItem33_8FrontendFit`" + `), the tensor-parallel sync term (` + "`timing/tpsync.go`" + `: µs per
all-reduce × log2(TP), 2.0 on NVLink4 and 0.5 on NVLink5, fitted on InferenceMAX's H100 and B200 FP8 rows only by
` + "`go test ./cmd/dynosim/validation -run TestItem33_4Fit -fit`" + `; its H200 and B200 FP4 rows are held out) and vLLM's
per-sequence cost (` + "`timing/overhead.go`" + `: 25 µs per sequence in a pass, fitted on the same InferenceMAX rows by
` + "`-run TestItem33_8PerSeqFit -fitseq`" + `). Under vLLM an FP8 KV cache is read at BF16's speed except on Blackwell, as
vLLM's documentation states (no latency gain without fused dequantization; ` + "`timing/roofline.go`" + `), not fitted. The Llama-3.1-8B and Qwen3-32B points and the other twelve
BLIS runs (other models, engines, versions and teams) were not looked at while choosing and are reported
separately. The kernels are priced from AIConfigurator's measured kernel tables of the run's GPU and engine (the
default timing since issue 33 item 3; every source below was measured on a GPU and engine AIC measured), the
fitted curves where no table covers a shape; tables, curves and interconnect come from kernel measurements, not
from these points (` + "`docs/timing.md`, `timing/curves.go`, `timing/interconnect.go`" + `). The three fitted
choices above were made with the curves and kept on the tables; ` + "`dynosim validate --kernels curves`" + ` gives the
curves' figures.

`
