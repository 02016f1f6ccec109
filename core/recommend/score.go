package recommend

import (
	"errors"
	"fmt"
	"math"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/report"
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
	"num_requests", "completed_requests", "duration_ms", "total_gpus", "gpu_hours",
	"output_throughput_tok_s", "request_throughput_rps", "mean_output_token_throughput_per_user",
	"goodput_request_throughput_rps", "goodput_completed_requests", "goodput_output_throughput_tok_s",
	"mean_ttft_ms", "p99_ttft_ms", "mean_itl_ms", "p99_itl_ms", "mean_tpot_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms",
	"prefix_cache_reused_ratio", "num_preemptions",
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
	avg := s["gpu_hours"] / (s["duration_ms"] / 3.6e6)
	if !(avg > 0) {
		avg = s["total_gpus"]
	}
	m["avg_gpus"] = avg
	m["output_throughput_per_gpu_tok_s"] = s["output_throughput_tok_s"] / avg
	if g, ok := s["goodput_request_throughput_rps"]; ok {
		m["goodput_per_gpu_rps"] = g / avg
	}
	return m
}

// score is a feasible candidate's score for target, signed so that
// higher is better; NaN when the metric is undefined (ranked last).
func score(target string, m report.Summary) float64 {
	switch target {
	case "throughput":
		return m["output_throughput_tok_s"]
	case "throughput_per_gpu", "pareto":
		return m["output_throughput_per_gpu_tok_s"]
	case "throughput_per_user":
		return m["mean_output_token_throughput_per_user"]
	case "goodput":
		return value(m, "goodput_request_throughput_rps")
	case "goodput_per_gpu":
		return value(m, "goodput_per_gpu_rps")
	case "ttft":
		return -m["mean_ttft_ms"]
	case "e2e_latency":
		return -m["mean_e2e_latency_ms"]
	case "min_gpus":
		return -m["total_gpus"]
	case "max_rate":
		return value(m, "max_rate")
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
		if g := value(m, "goodput_request_throughput_rps"); !(g >= min) {
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
	}{{"mean TTFT", sla.TTFTMs, "mean_ttft_ms"}, {"mean TPOT", sla.ITLMs, "mean_tpot_ms"}, {"mean E2E", sla.E2EMs, "mean_e2e_latency_ms"}} {
		if b.bound != nil && !(m[b.key] <= *b.bound) {
			return fmt.Sprintf("%s %.4g ms is above the SLA's %g ms (strict_sla)", b.name, m[b.key], *b.bound)
		}
	}
	return ""
}
