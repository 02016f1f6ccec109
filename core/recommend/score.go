package recommend

import (
	"errors"
	"fmt"
	"math"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
	"github.com/dynosim/dynosim-web/timing"
)

// Statuses and reason categories of the ledger (AISimulate's names).
const (
	Feasible   = "feasible"
	Infeasible = "infeasible"
	Failed     = "failed"

	ReasonGPUBudget       = "gpu_budget"
	ReasonKVCapacity      = "kv_capacity"
	ReasonSLA             = "sla_constraint"
	ReasonTopology        = "backend_topology"
	ReasonMaterialization = "candidate_materialization"
	ReasonRuntime         = "replay_runtime"
	ReasonNoSamples       = "no_samples"
)

// Category is the reason category of a candidate's failed run: a worker
// that cannot fit its GPU, a combination nobody supports, a run past the
// service's limits or clock, or a config that does not make sense.
func Category(err error) string {
	switch {
	case errors.Is(err, timing.ErrDoesNotFit):
		return ReasonKVCapacity
	case errors.Is(err, config.ErrUnsupported):
		return ReasonTopology
	case errors.Is(err, sim.ErrTooLarge), errors.Is(err, sim.ErrCanceled), errors.Is(err, errRuntime):
		return ReasonRuntime
	}
	return ReasonMaterialization
}

var errRuntime = errors.New("replay failed")

// metricKeys are the summary keys a ledger entry keeps (simulated, never
// wall-clock).
var metricKeys = []string{
	schema.NumRequests, schema.CompletedRequests, schema.DurationMs, schema.TotalGPUs, schema.GPUHours,
	schema.OutputThroughputTokS, schema.RequestThroughputRPS, schema.PerUser.Key(schema.Mean),
	schema.GoodputRequestThroughputRPS, schema.GoodputCompletedRequests, schema.GoodputOutputThroughputTokS,
	schema.TTFT.Key(schema.Mean), schema.TTFT.Key(schema.P99), schema.ITL.Key(schema.Mean), schema.ITL.Key(schema.P99), schema.TPOT.Key(schema.Mean), schema.E2E.Key(schema.Mean), schema.E2E.Key(schema.P99),
	schema.PrefixCacheReusedRatio, schema.NumPreemptions,
}

// metrics picks the ledger's metrics of a summary, adding the per-GPU
// throughputs over the time-averaged provisioned GPUs (gpu_hours over the
// duration, so a planner run compares fairly).
func metrics(s report.Summary) report.Summary {
	m := report.Summary{}
	for _, k := range metricKeys {
		if v, ok := s[k]; ok {
			m[k] = v
		}
	}
	avg := s[schema.GPUHours] / (s[schema.DurationMs] / 3.6e6)
	if !(avg > 0) {
		avg = s[schema.TotalGPUs]
	}
	m[schema.AvgGPUs] = avg
	m[schema.OutputThroughputPerGPUTokS] = s[schema.OutputThroughputTokS] / avg
	if g, ok := s[schema.GoodputRequestThroughputRPS]; ok {
		m[schema.GoodputPerGPURPS] = g / avg
	}
	return m
}

// score is a feasible candidate's score for target, signed so that
// higher is better; NaN when the metric is undefined (ranked last).
func score(target string, m report.Summary) float64 {
	switch target {
	case "throughput":
		return m[schema.OutputThroughputTokS]
	case "throughput_per_gpu", "pareto":
		return m[schema.OutputThroughputPerGPUTokS]
	case "throughput_per_user":
		return m[schema.PerUser.Key(schema.Mean)]
	case "goodput":
		return value(m, schema.GoodputRequestThroughputRPS)
	case "goodput_per_gpu":
		return value(m, schema.GoodputPerGPURPS)
	case "ttft":
		return -m[schema.TTFT.Key(schema.Mean)]
	case "e2e_latency":
		return -m[schema.E2E.Key(schema.Mean)]
	case "min_gpus":
		return -m[schema.TotalGPUs]
	case "max_rate":
		return value(m, schema.MaxRate)
	}
	return math.NaN()
}

func value(m report.Summary, k string) float64 {
	if v, ok := m[k]; ok {
		return v
	}
	return math.NaN()
}

// slaBreach says why a run breaks the search's SLA rules, or "": below
// min_goodput_rps, or (strict_sla) a mean above a bound — mean TPOT is
// held to itl_ms.
func slaBreach(spec *Spec, sla *report.SLAInfo, m report.Summary) string {
	o := &spec.Optimization
	if min := o.Limits.MinGoodputRPS; min > 0 {
		if g := value(m, schema.GoodputRequestThroughputRPS); !(g >= min) {
			return fmt.Sprintf("goodput %.3g req/s is below min_goodput_rps %g", g, min)
		}
	}
	if !o.StrictSLA || sla == nil {
		return ""
	}
	for _, b := range []struct {
		name  string
		bound *float64
		key   string
	}{{"mean TTFT", sla.TTFTMs, schema.TTFT.Key(schema.Mean)}, {"mean TPOT", sla.ITLMs, schema.TPOT.Key(schema.Mean)}, {"mean E2E", sla.E2EMs, schema.E2E.Key(schema.Mean)}} {
		if b.bound != nil && !(m[b.key] <= *b.bound) {
			return fmt.Sprintf("%s %.4g ms is above the SLA's %g ms (strict_sla)", b.name, m[b.key], *b.bound)
		}
	}
	return ""
}
