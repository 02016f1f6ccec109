package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// KPI is one headline card above the tables.
type KPI struct {
	ID, Label, Value, Sub, Help string
	State                       string // met | missed | "": coloured against the SLA
}

// Class is the card's CSS class: its SLA state colours it.
func (k KPI) Class() string {
	if k.State == "" {
		return "kpi"
	}
	return "kpi " + k.State
}

// TipID is the id of the card's tooltip.
func (k KPI) TipID() string { return "tip-" + k.ID }

func glossaryText(name string) string {
	for _, t := range metrics.Glossary {
		if t.Name == name {
			return t.Text
		}
	}
	return ""
}

func num(s map[string]float64, k string) float64 {
	if v, ok := s[k]; ok {
		return v
	}
	return math.NaN()
}

// pair prints two durations as "a / b".
func pair(a, b float64) string { return metrics.Duration(a) + " / " + metrics.Duration(b) }

// kpis are the headline figures of a report: the answers first.
func kpis(r *parsedReport) []KPI {
	s := r.Summary
	gpus := num(s, schema.TotalGPUs)
	thr := num(s, schema.OutputThroughputTokS)
	perGPU := "per GPU: n/a"
	if gpus > 0 && !math.IsNaN(thr) {
		perGPU = metrics.Format(thr/gpus) + " tok/s per GPU"
	}
	out := []KPI{{ID: "kpi-throughput", Label: "Output throughput", Value: metrics.Format(thr) + " tok/s", Sub: perGPU,
		Help: metrics.Help(schema.OutputThroughputTokS) + " Per GPU: " + glossaryText("Output throughput per GPU")}}
	good := KPI{ID: "kpi-goodput", Label: "Goodput", Help: glossaryText("Goodput")}
	if g, ok := s[schema.GoodputRequestThroughputRPS]; ok {
		good.Value = metrics.Format(g) + " req/s"
		share := "n/a"
		if n := num(s, schema.NumRequests); n > 0 {
			share = fmt.Sprintf("%.1f %%", num(s, schema.GoodputCompletedRequests)/n*100)
		}
		good.Sub = share + " of requests met the SLA" + slaText(r.SLA)
	} else {
		good.Value, good.Sub = "no SLA set", "set evaluation.sla (ttft_ms, itl_ms, e2e_ms) to measure goodput"
	}
	out = append(out, good,
		KPI{ID: "kpi-ttft", Label: "TTFT p50 / p99", Value: pair(num(s, schema.TTFT.Key(schema.Median)), num(s, schema.TTFT.Key(schema.P99))),
			Sub: "mean " + metrics.Duration(num(s, schema.TTFT.Key(schema.Mean))), Help: glossaryText("TTFT")},
		KPI{ID: "kpi-itl", Label: "ITL p50 / p99", Value: pair(num(s, schema.ITL.Key(schema.Median)), num(s, schema.ITL.Key(schema.P99))),
			Sub: "mean " + metrics.Duration(num(s, schema.ITL.Key(schema.Mean))), Help: glossaryText("ITL")},
		KPI{ID: "kpi-e2e", Label: "Request latency p50", Value: metrics.Duration(num(s, schema.E2E.Key(schema.Median))),
			Sub: "p99 " + metrics.Duration(num(s, schema.E2E.Key(schema.P99))), Help: glossaryText("Request latency")},
		KPI{ID: "kpi-gpus", Label: "GPUs", Value: metrics.Format(gpus), Sub: gpuSub(r), Help: metrics.Help(schema.TotalGPUs)},
		KPI{ID: "kpi-duration", Label: "Simulated duration", Value: metrics.Duration(num(s, schema.DurationMs)),
			Sub:  metrics.Format(num(s, schema.CompletedRequests)) + " of " + metrics.Format(num(s, schema.NumRequests)) + " requests completed",
			Help: metrics.Help(schema.DurationMs) + " " + glossaryText("Simulated vs wall time")},
	)
	v := r.Verdict
	for i := range out {
		switch out[i].ID {
		case "kpi-goodput":
			if v != nil && v.SLAMet != nil {
				out[i].State = map[bool]string{true: "met", false: "missed"}[*v.SLAMet]
			}
		case "kpi-ttft":
			out[i].State = checkState(v, schema.TTFT.Key(schema.P99))
		case "kpi-itl":
			out[i].State = checkState(v, schema.ITL.Key(schema.P99))
		case "kpi-e2e":
			out[i].State = checkState(v, schema.E2E.Key(schema.P99))
		}
	}
	return out
}

// gpuSub names the GPUs and, when a planner scaled the run, their
// time-averaged number.
func gpuSub(r *parsedReport) string {
	d := r.Deployment
	if len(d.Pools) == 0 {
		return ""
	}
	s := strings.Join(unique(d.Pools, func(p schema.PoolDeployment) string { return hardwareName(p.Hardware) }), ", ")
	if m := num(r.Summary, schema.MeanGPUs); r.Planner != nil && !math.IsNaN(m) {
		s += ", " + metrics.Format(m) + " on average (planner)"
	}
	return s
}

// slaText is " (TTFT ≤ 500 ms, ITL ≤ 50 ms)" or "".
func slaText(s *schema.SLAInfo) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, b := range []struct {
		name string
		v    *float64
	}{{"TTFT", s.TTFTMs}, {"ITL", s.ITLMs}, {"E2E", s.E2EMs}} {
		if b.v != nil {
			parts = append(parts, b.name+" ≤ "+metrics.Format(*b.v)+" ms")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// hardwareName prints a hardware id for people: h100_sxm → H100 SXM.
func hardwareName(h string) string {
	if h == "" {
		return "unknown GPU"
	}
	return strings.ToUpper(strings.ReplaceAll(h, "_", " "))
}

func unique[T any](xs []T, f func(T) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if s := f(x); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// BadgePool is one pool's line of the timing badge.
type BadgePool struct {
	Name, GPU, Layout, Timing, Validation string
}

// timingLabel names a pool's timing, with the profile it was read from:
// "default timing", "profile timing (perf_data.npz)", "default timing (aic
// vllm 0.24.0 h100_sxm)".
func timingLabel(p schema.PoolDeployment) string {
	if p.TimingKernels != "" { // the kernel tables or curves of timing type default (issue 33 item 3)
		return fmt.Sprintf("%s timing (%s)", p.Timing, p.TimingKernels)
	}
	if p.TimingProfile != "" {
		return fmt.Sprintf("%s timing (%s)", p.Timing, p.TimingProfile)
	}
	return p.Timing + " timing"
}

// timingProfile is the timing profile a run's pools were read from ("":
// none).
func timingProfile(r *parsedReport) string {
	for _, p := range r.Deployment.Pools {
		if p.TimingProfile != "" {
			return p.TimingProfile
		}
	}
	return ""
}

// badgePools describes each pool: GPU, replicas × tensor × attention-data
// parallelism, timing model and how far it is validated.
func badgePools(d schema.Deployment) []BadgePool {
	out := make([]BadgePool, 0, len(d.Pools))
	for _, p := range d.Pools {
		out = append(out, BadgePool{
			Name:       p.Name,
			GPU:        hardwareName(p.Hardware),
			Layout:     fmt.Sprintf("%d replica%s × tensor %d × attention-data %d (%d GPU%s per worker)", p.Replicas, plural(p.Replicas), p.Tensor, p.AttentionData, p.GPUsPerWorker, plural(p.GPUsPerWorker)),
			Timing:     timingLabel(p),
			Validation: p.Validation,
		})
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// MemoryLine is one pool's memory fit per GPU.
type MemoryLine struct {
	Text string
	Fits bool
	// bar widths in percent of the GPU's memory
	Weights, KV, Reserve float64
}

// memoryLines divide each pool's GPU memory: weights, KV cache, reserve, free.
func memoryLines(d schema.Deployment) []MemoryLine {
	out := make([]MemoryLine, 0, len(d.Pools))
	for _, p := range d.Pools {
		t := fmt.Sprintf("%s, per %s (%s): weights %s, KV cache %s (%s blocks of %d tokens, capacity %s), reserve %s, free %s",
			p.Name, hardwareName(p.Hardware), gib(p.GPUBytes), gib(p.WeightsBytes), gib(p.KVBytes),
			metrics.Format(float64(p.KVBlocks)), p.BlockSize, p.Capacity, gib(p.ReserveBytes), gib(p.FreeBytes))
		if !p.Fits {
			t += fmt.Sprintf(" — does not fit: %s over the GPU's memory", gib(-p.FreeBytes))
		}
		l := MemoryLine{Text: t, Fits: p.Fits}
		if p.GPUBytes > 0 {
			pct := func(b float64) float64 { return math.Max(0, math.Min(100, b/p.GPUBytes*100)) }
			l.Weights, l.KV, l.Reserve = pct(p.WeightsBytes), pct(p.KVBytes), pct(p.ReserveBytes)
			if l.Weights+l.KV+l.Reserve > 100 {
				f := 100 / (l.Weights + l.KV + l.Reserve)
				l.Weights, l.KV, l.Reserve = l.Weights*f, l.KV*f, l.Reserve*f
			}
		}
		out = append(out, l)
	}
	return out
}

// ranWhat says what a run simulated: "1,000 requests, 8 × H100 SXM,
// default timing".
func ranWhat(r *parsedReport) string {
	parts := []string{metrics.Format(num(r.Summary, schema.NumRequests)) + " requests"}
	var pools []string
	for _, p := range r.Deployment.Pools {
		s := fmt.Sprintf("%d × %s", p.Replicas*max(1, p.GPUsPerWorker), hardwareName(p.Hardware))
		if len(r.Deployment.Pools) > 1 {
			s += " " + p.Name
		}
		pools = append(pools, s)
	}
	if len(pools) > 0 {
		parts = append(parts, strings.Join(pools, " + "))
	}
	// The timing and its profile; the badge names the kernel source too.
	if t := unique(r.Deployment.Pools, func(p schema.PoolDeployment) string {
		p.TimingKernels = ""
		return timingLabel(p)
	}); len(t) > 0 {
		parts = append(parts, strings.Join(t, ", "))
	}
	if r.Planner != nil {
		parts = append(parts, "planner in the loop")
	}
	return strings.Join(parts, ", ")
}
