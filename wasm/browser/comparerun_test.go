package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// compareRun answers in the shape the page reads: rows and the measured
// CDFs of an AIPerf export (summary and per-request records).
func TestCompareRun(t *testing.T) {
	dir := "../../core/measured/testdata/aiperf-run1"
	var files []realFile
	for _, n := range []string{"profile_export_aiperf.json", "profile_export.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Skip("no AIPerf fixture:", err)
		}
		files = append(files, realFile{n, b})
	}
	report := []byte(`{"summary": {"mean_ttft_ms": 2000, "p99_ttft_ms": 3000, "mean_itl_ms": 20, "request_throughput_rps": 3}}`)
	out, err := compareRun(files, report)
	if err != nil {
		t.Fatal(err)
	}
	if out["tool"] != "aiperf" {
		t.Errorf("tool = %v", out["tool"])
	}
	rows := out["rows"].([]any)
	if len(rows) == 0 || rows[0].(map[string]any)["key"] != schema.TTFT.Key(schema.Mean) {
		t.Errorf("rows = %v", rows)
	}
	cdf := out["cdf"].(map[string]any)
	ttft, ok := cdf["ttft_ms"].(map[string]any)
	if !ok || len(ttft["qs"].([]any)) != len(ttft["values"].([]any)) || len(ttft["qs"].([]any)) < 2 {
		t.Errorf("ttft cdf = %v", cdf["ttft_ms"])
	}
	if _, err := compareRun([]realFile{{"notes.txt", []byte("hello")}}, report); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a wrong file: %v", err)
	}
}
