package main

import (
	"fmt"
	"github.com/vugu/vugu"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// VerdictView is the answer above every table (issue 32 item 4): the
// report's verdict section (core/report/verdict.go computes it, so the
// CLI's "Verdict:" line and the page say the same) laid out as a headline
// and one line per finding.
type VerdictView struct {
	State    string // met | missed | nosla: the block's colour
	Headline string // "SLA met" | "SLA missed" | "No SLA set"
	Checks   []VerdictLine
	Within   string // "90.8 % of requests within the SLA" or ""
	Load     VerdictLine
	Cause    string // "TTFT is mostly prefill (58 %), in the aggregated pool" or ""
	Text     string // the CLI's line, for copying
}

// VerdictLine is one finding; Bad colours it.
type VerdictLine struct {
	Text string
	Bad  bool
}

// checkNames label the verdict's checks.
var checkNames = map[string]string{
	schema.TTFT.Key(schema.P99): "p99 TTFT", schema.ITL.Key(schema.P99): "p99 ITL", schema.E2E.Key(schema.P99): "p99 request latency",
}

// verdictView lays out v; nil without one (a report from before the
// verdict existed).
func verdictView(v *schema.Verdict) *VerdictView {
	if v == nil {
		return nil
	}
	out := &VerdictView{State: "nosla", Headline: "No SLA set", Text: v.Text}
	if v.SLAMet != nil {
		out.State, out.Headline = "missed", "SLA missed"
		if *v.SLAMet {
			out.State, out.Headline = "met", "SLA met"
		}
	}
	for _, c := range v.Checks {
		l := VerdictLine{Bad: !c.Met}
		switch {
		case c.ValueMs == nil:
			l.Text = fmt.Sprintf("%s: not measured (target %s)", checkNames[c.Metric], metrics.Duration(c.TargetMs))
		case c.Met:
			l.Text = fmt.Sprintf("%s %s, within the %s target (%.0f %% of it)", checkNames[c.Metric], metrics.Duration(*c.ValueMs), metrics.Duration(c.TargetMs), *c.Ratio*100)
		default:
			l.Text = fmt.Sprintf("%s %s, over the %s target by %.1f×", checkNames[c.Metric], metrics.Duration(*c.ValueMs), metrics.Duration(c.TargetMs), *c.Ratio)
		}
		out.Checks = append(out.Checks, l)
	}
	if f := v.SLAMetFraction; f != nil {
		out.Within = fmt.Sprintf("%.1f %% of requests within the SLA", *f*100)
	}
	out.Load = VerdictLine{Text: "Not saturated: the deployment keeps up with the offered load."}
	if v.Saturated {
		out.Load = VerdictLine{Text: "Saturated: " + v.SaturationReason + ". Its latencies depend on how long the trace is, not only on the deployment.", Bad: true}
	}
	if b := v.Bottleneck; b != nil {
		where := "in the " + b.Pool + " pool"
		switch b.Pool {
		case "frontend":
			where = "in the frontend"
		case "transfer":
			where = "on the KV transfer link"
		}
		out.Cause = fmt.Sprintf("TTFT is mostly %s (%.0f %% of the mean, %s), %s.", strings.ReplaceAll(b.Part, "_", " "), b.Share*100, metrics.Duration(b.MeanMs), where)
	}
	return out
}

// checkState is "met", "missed" or "" (no bound on that metric): the
// colour of the KPI card showing it.
func checkState(v *schema.Verdict, key string) string {
	if v == nil {
		return ""
	}
	for _, c := range v.Checks {
		if c.Metric == key {
			if c.Met {
				return "met"
			}
			return "missed"
		}
	}
	return ""
}

// OnDetailsToggle keeps the Details block's state across renders (the
// template sets its open attribute from DetailsOpen).
func (c *Root) OnDetailsToggle(event vugu.DOMEvent) {
	if e := event.JSEvent(); e.Truthy() {
		c.DetailsOpen = e.Get("target").Get("open").Bool()
	}
}
