package main

import (
	"math"
	"testing"
)

// An undefined summary value (null) shows as "—", never as 0, and is not
// compared with the previous run.
func TestSummaryNullIsUndefined(t *testing.T) {
	s, err := parseSummary([]byte(`{"summary": {"request_throughput_rps": null, "mean_ttft_ms": null, "num_requests": 3}}`))
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
