package recommend

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Attainment is the share of requests that must meet every SLA bound for
// a run to meet the SLA (the max_rate target).
const Attainment = 0.9

// rateKnob is the config path of the arrival rate max_rate searches: the
// trace's speedup, or the synthetic request rate.
func rateKnob(cfg *config.Config) string {
	if cfg.Traffic.Source.Type == "trace" {
		return "traffic.load.speedup"
	}
	return "traffic.load.requests_per_second"
}

// meets reports whether a run meets the SLA: Attainment of its requests
// meet every bound.
func meets(rep *report.Report) bool {
	s := rep.Summary
	return s[schema.NumRequests] > 0 && s[schema.GoodputCompletedRequests] >= Attainment*s[schema.NumRequests]
}

// maxRate finds the highest arrival rate at which candidate sets still
// meets the SLA: from the start rate it doubles (or halves) to bracket the
// change, then bisects (geometrically) until the bracket is within the
// tolerance. It returns the run at the rate found and that rate.
func maxRate(sp *Space, ev Evaluator, cfg *config.Config, sets []string) (*report.Report, float64, string, error) {
	mr := sp.Spec.Optimization.MaxRate
	load := cfg.Traffic.Load.Type
	if cfg.Traffic.Source.Type != "trace" && load != "poisson" && load != "constant_rate" {
		return nil, 0, ReasonMaterialization, errors.New("max_rate: needs trace timestamps or a poisson or constant_rate load (a concurrency load has no rate)")
	}
	if cfg.Evaluation.SLA == (config.SLA{}) {
		return nil, 0, ReasonMaterialization, errors.New("max_rate: needs evaluation.sla")
	}
	knob := rateKnob(cfg)
	start := mr.Start
	if knob == "traffic.load.requests_per_second" && cfg.Traffic.Load.RequestsPerSecond > 0 {
		start = cfg.Traffic.Load.RequestsPerSecond
	}
	// lo meets the SLA (best is its run; nil: none found yet), hi does not
	// (+Inf: none found yet).
	lo, hi := 0.0, math.Inf(1)
	var best *report.Report
	runs := 0
	try := func(rate float64) (string, error) {
		runs++
		rep, cat, err := ev.Predict(append(slices.Clip(sets), fmt.Sprintf("%s=%v", knob, rate)))
		if err != nil {
			return cat, err
		}
		if meets(rep) {
			lo, best = rate, rep
		} else {
			hi = rate
		}
		return "", nil
	}
	next := start
	for runs < mr.MaxRuns && (best == nil || math.IsInf(hi, 1)) { // bracket
		if cat, err := try(next); err != nil {
			return nil, 0, cat, err
		}
		if best == nil {
			next = hi / 2
		} else {
			next = lo * 2
		}
	}
	if best == nil {
		return nil, 0, ReasonSLA, fmt.Errorf("max_rate: no rate down to %.4g meets the SLA", hi)
	}
	for !math.IsInf(hi, 1) && hi/lo > 1+mr.Tolerance && runs < mr.MaxRuns { // bisect
		if cat, err := try(math.Sqrt(lo * hi)); err != nil {
			return nil, 0, cat, err
		}
	}
	return best, lo, "", nil
}
