package main

import (
	"math"
	"testing"
)

// An undefined summary value (null) shows as "—", never as 0, and is not
// compared with the previous run.
func TestSummaryNullIsUndefined(t *testing.T) {
	s, _, err := parseReport([]byte(`{"summary": {"request_throughput_rps": null, "mean_ttft_ms": null, "num_requests": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(s["request_throughput_rps"]) || s["num_requests"] != 3 {
		t.Fatalf("parsed %v", s)
	}
	rows := summaryRows(s, map[string]float64{"request_throughput_rps": 2, "num_requests": 3})
	for _, r := range rows {
		if r.Key == "request_throughput_rps" && (r.Value != "—" || r.Delta != "") {
			t.Fatalf("row %+v", r)
		}
	}
	if lr := latencyRows(s); lr[0].Cells[0] != "—" {
		t.Fatalf("TTFT avg cell %q", lr[0].Cells[0])
	}
}

// The router table: each worker's requests and share; the estimated
// overlap beside the reuse obtained only for routers that estimate.
func TestRouterRows(t *testing.T) {
	_, workers, err := parseReport([]byte(`{"summary": {}, "workers": [{"worker": 0, "requests": 3, "request_share": 0.75}, {"worker": 1, "requests": 1, "request_share": 0.25}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rows, overlap := routerRows(workers, map[string]float64{"router_estimated_overlap_ratio": 0.2, "prefix_cache_reused_ratio": 0.19})
	if len(rows) != 2 || rows[0] != (BalanceRow{"0", "3", "75.0 %"}) || overlap != "estimated overlap 20.0 % of prompt tokens, reuse obtained 19.0 %" {
		t.Fatalf("rows %v overlap %q", rows, overlap)
	}
	if _, o := routerRows(workers, map[string]float64{"router_estimated_overlap_ratio": math.NaN()}); o != "" {
		t.Fatalf("round robin: %q", o)
	}
}
