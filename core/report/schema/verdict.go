package schema

// Verdict is the report's answer before its tables (issue 32 item 4): did
// the run meet its SLA and by how much, is the deployment saturated, and
// what dominates its time to first token. core/report computes it once;
// the CLI prints Text, the page draws the fields, the Worker returns them.
type Verdict struct {
	// SLAMet: every bound of evaluation.sla holds at p99 (the rule
	// recommend's meets_sla uses); null when the config sets no SLA.
	SLAMet *bool `json:"sla_met"`
	// SLAMetFraction: goodput_completed_requests / completed_requests,
	// the share of completed requests within every bound; null without
	// an SLA or a completed request.
	SLAMetFraction *float64 `json:"sla_met_fraction"`
	// Checks are the bounds, in the order TTFT, ITL, E2E (only those set).
	Checks []VerdictCheck `json:"checks"`
	// Saturated: the deployment cannot keep up with the offered load, so
	// its latencies depend on how long the trace is; Reason says which
	// rule fired ("" when not saturated).
	Saturated        bool   `json:"saturated"`
	SaturationReason string `json:"saturation_reason,omitempty"`
	// Bottleneck is the TTFT part with the largest mean and where it is
	// spent; null when no request got a token.
	Bottleneck *Bottleneck `json:"bottleneck"`
	// Text is the verdict in one line of words, as the CLI prints it.
	Text string `json:"text"`
}

// VerdictCheck is one SLA bound against the run's p99.
type VerdictCheck struct {
	Metric   string   `json:"metric"`    // summary key: p99_ttft_ms | p99_itl_ms | p99_e2e_latency_ms
	ValueMs  *float64 `json:"value_ms"`  // null: no request measured it
	TargetMs float64  `json:"target_ms"` // the bound
	Met      bool     `json:"met"`
	// Ratio is value / target: below 1 is headroom, above 1 the miss.
	Ratio *float64 `json:"ratio"`
}

// Bottleneck is the dominant TTFT part.
type Bottleneck struct {
	Part   string  `json:"part"` // a ttft_breakdown part name
	Pool   string  `json:"pool"` // aggregated | prefill | decode | transfer | frontend
	MeanMs float64 `json:"mean_ms"`
	Share  float64 `json:"share"` // of the mean TTFT
}
