package recommend

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Pick is recommendation.json's "best" (issue 32 item 2): a
// recommendation rather than a ledger. It is the top-ranked candidate that
// meets the SLA; when none does, the candidate closest to it (the highest
// sla_met_fraction, rank breaking ties), with MeetsSLA false and a Note.
type Pick struct {
	ID             string             `json:"candidate_id"`
	Rank           int                `json:"rank,omitempty"` // 0: not ranked (not feasible)
	Label          string             `json:"label"`
	MeetsSLA       bool               `json:"meets_sla"`
	SLAMetFraction *float64           `json:"sla_met_fraction"`
	WithinBudget   bool               `json:"within_budget"`
	Headline       map[string]float64 `json:"headline"` // keys name their units
	Note           string             `json:"note,omitempty"`
	Warnings       []string           `json:"warnings,omitempty"` // edges of searched ranges
}

// Headline keys: each names its unit.
const (
	HeadP99TTFTMs  = "p99_ttft_ms"
	HeadP99ITLMs   = "p99_itl_ms"
	HeadTokS       = "output_throughput_tok_s"
	HeadTokSPerGPU = "output_throughput_per_gpu_tok_s"
	HeadGPUs       = "gpus"
)

// judgeSLA sets e's meets_sla and sla_met_fraction from its run's
// verdict (core/report/verdict.go, the rule predict's verdict states):
// meets_sla when each SLA bound the config sets holds at p99 and the
// search's own rules hold (breach is slaBreach's answer: min_goodput_rps,
// strict_sla's means); sla_met_fraction is the verdict's share of
// completed requests within every bound (null without an SLA). A config
// with no SLA and no rule meets it trivially.
func judgeSLA(v *report.Verdict, breach string, e *Entry) {
	e.MeetsSLA = breach == "" && (v == nil || v.SLAMet == nil || *v.SLAMet)
	if v != nil && v.SLAMetFraction != nil {
		f := *v.SLAMetFraction
		e.SLAMetFraction = &f
	}
}

// Label names a candidate's deployment in words: mode, each pool's
// replicas by pool name, GPU and parallelism (DP and PP only when above
// 1), router policy — "disaggregated 2 prefill + 4 decode × H100 TP1,
// kv_router".
func Label(cfg *config.Config) string {
	w := &cfg.Engine.Workers
	shape := func(r *config.Role) string {
		var s []string
		if g := cmp.Or(r.Hardware, cfg.Engine.Hardware); g != "" {
			s = append(s, g)
		}
		p := r.Parallelism
		s = append(s, fmt.Sprintf("TP%d", max(p.Tensor, 1)))
		if p.AttentionData > 1 {
			s = append(s, fmt.Sprintf("DP%d", p.AttentionData))
		}
		if p.Pipeline > 1 {
			s = append(s, fmt.Sprintf("PP%d", p.Pipeline))
		}
		return strings.Join(s, " ")
	}
	var b string
	if cfg.Engine.Mode == "disaggregated" {
		pre, dec := shape(&w.Prefill), shape(&w.Decode)
		if pre == dec {
			b = fmt.Sprintf("disaggregated %d prefill + %d decode × %s", w.Prefill.Parallelism.Replicas, w.Decode.Parallelism.Replicas, pre)
		} else {
			b = fmt.Sprintf("disaggregated %d prefill × %s + %d decode × %s", w.Prefill.Parallelism.Replicas, pre, w.Decode.Parallelism.Replicas, dec)
		}
	} else {
		b = fmt.Sprintf("aggregated %d × %s", w.Aggregated.Parallelism.Replicas, shape(&w.Aggregated))
	}
	return b + ", " + cfg.Router.Policy
}

// rankAndPick numbers the ranked (feasible, best first) entries, sorts the
// ledger by rank (ranked first, the rest in trial order), marks equal
// candidates and chooses the pick.
func (l *Ledger) rankAndPick(sp *Space, ranked []Entry) {
	rank := make(map[string]int, len(ranked))
	for i, e := range ranked {
		rank[e.ID] = i + 1
	}
	for i := range l.Candidates {
		if e := &l.Candidates[i]; !e.CacheHit {
			e.Rank = rank[e.ID]
		}
	}
	slices.SortStableFunc(l.Candidates, func(a, b Entry) int {
		switch {
		case a.Rank > 0 && b.Rank > 0:
			return a.Rank - b.Rank
		case a.Rank > 0:
			return -1
		case b.Rank > 0:
			return 1
		}
		return a.Trial - b.Trial
	})
	// Equal candidates: a ranked entry lists the later-ranked ones whose
	// score, GPUs and every ledger metric are the same (e.g. two router
	// policies on one worker). Quadratic in the ranked entries, which are
	// at most max_trials and whose runs cost far more.
	taken := make([]bool, len(ranked))
	for i := range ranked {
		if taken[i] {
			continue
		}
		a := &l.Candidates[i] // sorted: position i has rank i+1
		for j := i + 1; j < len(ranked); j++ {
			if b := &l.Candidates[j]; !taken[j] && equalRuns(a, b) {
				taken[j] = true
				a.Equal = append(a.Equal, b.ID)
				b.SameAs = a.ID
			}
		}
	}
	l.Pick = pick(sp, l.Candidates, len(ranked))
}

// equalRuns reports whether a and b are the same on every ranked figure.
func equalRuns(a, b *Entry) bool {
	if a.UsedGPUs != b.UsedGPUs || (a.Score == nil) != (b.Score == nil) || a.Score != nil && *a.Score != *b.Score || len(a.Metrics) != len(b.Metrics) {
		return false
	}
	for k, v := range a.Metrics {
		if w, ok := b.Metrics[k]; !ok || w != v && !(math.IsNaN(v) && math.IsNaN(w)) {
			return false
		}
	}
	return true
}

// pick chooses the best of es (sorted by rank; the first nRanked are
// ranked): the first ranked entry meeting the SLA, else the run closest to
// it. nil when no candidate completed a request.
func pick(sp *Space, es []Entry, nRanked int) *Pick {
	var best *Entry
	for i := range es[:nRanked] {
		if es[i].MeetsSLA {
			best = &es[i]
			break
		}
	}
	note := ""
	if best == nil {
		// Closest: the highest fraction of requests meeting the SLA among
		// the runs that completed requests (ranked ones first on ties).
		frac := func(e *Entry) float64 {
			if e.SLAMetFraction == nil {
				return -1
			}
			return *e.SLAMetFraction
		}
		for i := range es {
			e := &es[i]
			if e.CacheHit || e.Metrics[schema.CompletedRequests] == 0 {
				continue
			}
			if best == nil || frac(e) > frac(best) {
				best = e
			}
		}
		if best == nil {
			return nil
		}
		note = "no candidate meets the SLA; this one comes closest"
		if f := best.SLAMetFraction; f != nil {
			note += fmt.Sprintf(" (%.1f%% of completed requests meet every SLA target)", 100**f)
		}
		if best.Status != Feasible {
			note += "; it is " + best.Status + ": " + best.Reason
		}
	}
	m := best.Metrics
	p := &Pick{ID: best.ID, Rank: best.Rank, Label: best.Label, MeetsSLA: best.MeetsSLA, SLAMetFraction: best.SLAMetFraction,
		WithinBudget: best.WithinBudget, Note: note, Headline: map[string]float64{
			HeadP99TTFTMs: m[schema.TTFT.Key(schema.P99)], HeadP99ITLMs: m[schema.ITL.Key(schema.P99)],
			HeadTokS: m[schema.OutputThroughputTokS], HeadTokSPerGPU: m[schema.OutputThroughputPerGPUTokS], HeadGPUs: float64(best.UsedGPUs),
		}}
	p.Warnings = edgeWarnings(sp, best)
	return p
}

// edgeWarnings warn when e's value of a numeric searched domain (two or
// more values) is its smallest or largest: the optimum may lie beyond the
// searched range. A domain of names (router policies, presets) has no
// edge.
func edgeWarnings(sp *Space, e *Entry) []string {
	var out []string
	for _, d := range sp.Dims {
		if len(d.Values) < 2 {
			continue
		}
		nums := make([]float64, len(d.Values))
		numeric := true
		for i, v := range d.Values {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				numeric = false
				break
			}
			nums[i] = f
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(e.Config[d.Path]), 64)
		if !numeric || err != nil || slices.Min(nums) == slices.Max(nums) {
			continue
		}
		if v == slices.Min(nums) || v == slices.Max(nums) {
			out = append(out, fmt.Sprintf("the best sits at the edge of %s (%s of [%s])", d.Path, e.Config[d.Path], strings.Join(d.Values, ", ")))
		}
	}
	return out
}
