package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Verdict is schema.Verdict: the section's shape lives in the schema.
type Verdict = schema.Verdict

// buildVerdict answers first (issue 32 item 4): the SLA at p99, the share
// of requests within it, saturation and the dominant TTFT part. It reads
// only sections already built, so it states nothing the tables below it do
// not show.
func buildVerdict(r *Report) *Verdict {
	s := r.Summary
	v := &Verdict{Checks: []schema.VerdictCheck{}}
	if r.SLA != nil {
		met := true
		for _, b := range []struct {
			bound *float64
			key   string
		}{{r.SLA.TTFTMs, schema.TTFT.Key(schema.P99)}, {r.SLA.ITLMs, schema.ITL.Key(schema.P99)}, {r.SLA.E2EMs, schema.E2E.Key(schema.P99)}} {
			if b.bound == nil {
				continue
			}
			c := schema.VerdictCheck{Metric: b.key, TargetMs: *b.bound}
			if x, ok := s[b.key]; ok && !math.IsNaN(x) {
				ratio := x / *b.bound
				c.ValueMs, c.Ratio, c.Met = &x, &ratio, x <= *b.bound
			}
			met = met && c.Met
			v.Checks = append(v.Checks, c)
		}
		v.SLAMet = &met
		if n := s[schema.CompletedRequests]; n > 0 {
			f := s[schema.GoodputCompletedRequests] / n
			v.SLAMetFraction = &f
		}
	}
	v.SaturationReason = saturation(r)
	v.Saturated = v.SaturationReason != ""
	v.Bottleneck = bottleneck(r)
	v.Text = verdictText(r, v)
	return v
}

// saturation says why the run looks saturated, or "". A saturated
// deployment's numbers depend on how long the trace is, not on the
// deployment. Either rule fires:
//  1. queue: the mean waiting queue per worker (over every worker, or the
//     prefill pool of a disaggregated run, which queues first) is above 1
//     request for more than half the simulated time and peaks above 5. A
//     deployment with spare capacity empties its queue between bursts; one
//     over capacity builds a backlog while requests arrive and spends the
//     rest of the run draining it. A run cut off while the queue still grows
//     (its last value above 1 and above twice its value at the midpoint,
//     rising through the last third) counts as well.
//  2. TTFT: mean TTFT above 10× the median. Prefill takes about the median
//     at most, so such a mean means a minority of requests waited in a
//     backlog far longer than any prefill.
func saturation(r *Report) string {
	if m := meanWaiting(r); len(m) >= 6 {
		n := len(m)
		busy := 0
		for _, x := range m {
			if x > 1 {
				busy++
			}
		}
		peak := slices.Max(m)
		mid, third, end := m[n/2], m[2*n/3], m[n-1]
		growing := end > 1 && end > 2*mid && end >= third && third >= mid
		if (float64(busy)/float64(n) > 0.5 && peak > 5) || growing {
			return "the waiting queue grows without bound"
		}
	}
	s := r.Summary
	if med := s[schema.TTFT.Key(schema.Median)]; med > 0 && s[schema.TTFT.Key(schema.Mean)] > 10*med {
		return "the mean TTFT is more than 10× the median"
	}
	return ""
}

// meanWaiting is the per-window mean of the waiting queue over the workers
// that queue first: the prefill pool's when there is one, else all.
func meanWaiting(r *Report) []float64 {
	ws := r.TimeSeries.Workers
	lo, hi := 0, len(ws)
	for _, p := range r.Pools {
		if p.Name == "prefill" {
			lo, hi = p.FirstWorker, min(len(ws), p.FirstWorker+p.Workers)
		}
	}
	if hi <= lo {
		return nil
	}
	m := make([]float64, len(r.TimeSeries.TMs))
	for b := range m {
		for w := lo; w < hi; w++ {
			m[b] += ws[w].Waiting[b]
		}
		m[b] /= float64(hi - lo)
	}
	return m
}

// partPool is where a TTFT part is spent. Parts before the first token's
// handoff belong to the first pool (prefill, or the aggregated pool); the
// transfer parts to the link; the decode side's to the decode pool.
var partPool = map[string]string{
	"frontend": "frontend", "kv_transfer_wait": "transfer", "kv_transfer": "transfer", "decode_queue": "decode",
}

// bottleneck is the TTFT part with the largest mean (the first such part
// on a tie), or nil without one.
func bottleneck(r *Report) *schema.Bottleneck {
	bd := r.TTFTBreakdown
	if bd == nil || len(bd.Parts) == 0 || !(bd.MeanTTFTMs > 0) {
		return nil
	}
	top := bd.Parts[0]
	for _, p := range bd.Parts[1:] {
		if p.MeanMs > top.MeanMs {
			top = p
		}
	}
	disagg := r.KVTransfer != nil
	pool, ok := partPool[top.Part]
	switch {
	case ok:
	case !disagg:
		pool = "aggregated"
	case top.Part == "first_token_pass":
		pool = "decode"
	default:
		pool = "prefill"
	}
	return &schema.Bottleneck{Part: top.Part, Pool: pool, MeanMs: top.MeanMs, Share: top.MeanMs / bd.MeanTTFTMs}
}

// verdictText is the verdict in one line: "SLA missed: p99 TTFT 2,686 ms >
// 1,000 ms target (2.7×), p99 ITL 7.7 ms ≤ 25 ms; 90.8 % of requests within
// SLA. Saturated: … TTFT is mostly engine queue (81 %, aggregated pool)."
func verdictText(r *Report, v *Verdict) string {
	var b strings.Builder
	names := map[string]string{schema.TTFT.Key(schema.P99): "p99 TTFT", schema.ITL.Key(schema.P99): "p99 ITL", schema.E2E.Key(schema.P99): "p99 E2E"}
	switch {
	case v.SLAMet == nil:
		fmt.Fprintf(&b, "No SLA set (evaluation.sla): p99 TTFT %s, p99 ITL %s.",
			latencyText(r.Summary[schema.TTFT.Key(schema.P99)]), latencyText(r.Summary[schema.ITL.Key(schema.P99)]))
	default:
		b.WriteString(map[bool]string{true: "SLA met: ", false: "SLA missed: "}[*v.SLAMet])
		for i, c := range v.Checks {
			if i > 0 {
				b.WriteString(", ")
			}
			switch {
			case c.ValueMs == nil:
				fmt.Fprintf(&b, "%s not measured (target %s)", names[c.Metric], latencyText(c.TargetMs))
			case c.Met:
				fmt.Fprintf(&b, "%s %s ≤ %s", names[c.Metric], latencyText(*c.ValueMs), latencyText(c.TargetMs))
			default:
				fmt.Fprintf(&b, "%s %s > %s (%s×)", names[c.Metric], latencyText(*c.ValueMs), latencyText(c.TargetMs), strconv.FormatFloat(*c.Ratio, 'f', 1, 64))
			}
		}
		if f := v.SLAMetFraction; f != nil {
			fmt.Fprintf(&b, "; %.1f %% of requests within SLA", *f*100)
		}
		b.WriteString(".")
	}
	if v.Saturated {
		b.WriteString(" Saturated: " + v.SaturationReason + " (results depend on the run length).")
	} else {
		b.WriteString(" Not saturated.")
	}
	if bn := v.Bottleneck; bn != nil {
		fmt.Fprintf(&b, " TTFT is mostly %s (%.0f %%, %s).", strings.ReplaceAll(bn.Part, "_", " "), bn.Share*100, poolWords(bn.Pool))
	}
	return b.String()
}

func poolWords(p string) string {
	switch p {
	case "frontend":
		return "the frontend"
	case "transfer":
		return "the KV transfer link"
	}
	return p + " pool"
}

// latencyText writes a latency for a sentence: thousands separated, one decimal
// below 100 ms.
func latencyText(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	if x < 100 && x != math.Trunc(x) {
		return strconv.FormatFloat(x, 'f', 1, 64) + " ms"
	}
	s := strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " ms"
}
