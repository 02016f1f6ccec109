package metrics

import (
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{1000, "1,000"}, {0, "0"}, {-12345, "-12,345"}, {1234.5, "1,234.50"}, {0.126, "0.13"},
		{-0.5, "-0.50"}, {1e15, "1,000,000,000,000,000.00"}, {math.NaN(), "n/a"}, {math.Inf(1), "n/a"},
	} {
		if got := Format(tc.v); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{850, "850 ms"}, {12.34, "12.30 ms"}, {12_400, "12.4 s"}, {3_542_951.227, "59 min 2 s"}, {11_520_000, "3 h 12 min"}, {math.NaN(), "n/a"},
	} {
		if got := Duration(tc.ms); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

// The table has AIPerf's columns and rows; goodput appears only with an
// SLA; every row and line has help; a missing value is n/a.
func TestBuild(t *testing.T) {
	s := map[string]float64{schema.TTFT.Key(schema.Mean): 12.5, "p50_ttft_ms": 99, schema.TTFT.Key(schema.Median): 10, schema.NumRequests: 1000, schema.OutputThroughputTokS: 10.25, schema.RequestThroughputRPS: 0.5}
	tb := Build(s)
	if strings.Join(tb.Columns, " ") != "avg min max p99 p90 p50 p75 std" || len(tb.Rows) != 7 {
		t.Fatalf("columns %v, %d rows", tb.Columns, len(tb.Rows))
	}
	if r := tb.Rows[0]; r.Cells[0] != "12.50" || r.Cells[5] != "10" || r.Cells[1] != "n/a" {
		t.Fatalf("TTFT row %v: p50 must come from median_ttft_ms", r.Cells)
	}
	if len(tb.Lines) != 3 || tb.Lines[2].Cells[0] != "1,000" {
		t.Fatalf("lines %+v: request count is an integer, no goodput without an SLA", tb.Lines)
	}
	s[schema.GoodputRequestThroughputRPS] = 1.5
	if tb := Build(s); len(tb.Lines) != 4 || !strings.Contains(tb.Text(), "Goodput (requests/sec)") {
		t.Fatal("no goodput line with an SLA")
	}
	for _, r := range append(Rows, Lines...) {
		if r.Help == "" || Help(r.Key) != r.Help || Help("p99_"+r.Key) != r.Help {
			t.Errorf("%s: help %q", r.Key, Help("p99_"+r.Key))
		}
	}
	if Help("no_such_key") != "" {
		t.Error("help for an unknown key")
	}
}
