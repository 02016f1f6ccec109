package measured

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

func TestCompare(t *testing.T) {
	run := &Run{Summary: map[string]float64{
		schema.InputLen.Key(schema.Mean): 100, // last in the order
		schema.RequestThroughputRPS:      2,
		schema.TTFT.Key(schema.P99):      200,
		schema.TTFT.Key(schema.Mean):     100,
		schema.ITL.Key(schema.Mean):      10,
		schema.ITL.Key(schema.Min):       0,   // no relative error: skipped
		schema.TPOT.Key(schema.Mean):     12,  // the prediction has null: skipped
		schema.E2E.Key(schema.P99):       900, // the prediction lacks it: skipped
	}}
	pred := []byte(`{"summary": {"mean_ttft_ms": 150, "p99_ttft_ms": 100, "mean_itl_ms": 10, "min_itl_ms": 5, "mean_tpot_ms": null,
		"request_throughput_rps": 3, "mean_input_sequence_length": 100, "wall_time_ms": 7}}`)
	rows, err := Compare(run, pred)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{schema.TTFT.Key(schema.Mean), 100, 150, 0.5},
		{schema.TTFT.Key(schema.P99), 200, 100, -0.5},
		{schema.ITL.Key(schema.Mean), 10, 10, 0},
		{schema.RequestThroughputRPS, 2, 3, 0.5},
		{schema.InputLen.Key(schema.Mean), 100, 100, 0},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows\n%v\nwant\n%v", rows, want)
	}
	var b strings.Builder
	FormatTable(&b, rows)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "metric ") || !strings.HasSuffix(lines[0], "error") {
		t.Fatalf("table:\n%s", b.String())
	}
	for _, l := range lines {
		if len(l) != len(lines[0]) {
			t.Fatalf("unaligned table:\n%s", b.String())
		}
	}
	if !strings.Contains(lines[1], schema.TTFT.Key(schema.Mean)) || !strings.HasSuffix(lines[1], "50.0%") || !strings.HasSuffix(lines[2], "-50.0%") || !strings.HasSuffix(lines[3], " 0.0%") {
		t.Fatalf("table:\n%s", b.String())
	}
}

func TestCompareErrors(t *testing.T) {
	run := &Run{Summary: map[string]float64{schema.TTFT.Key(schema.Mean): 1}}
	tests := []struct {
		name string
		run  *Run
		pred string
		want string
	}{
		{"no run", nil, `{}`, "compare: no measured run"},
		{"bad JSON", run, `{"summary": `, "prediction: invalid JSON"},
		{"not a report", run, `{"mean_ttft_ms": 1}`, "prediction: no summary object"},
		{"nothing in common", run, `{"summary": {"mean_itl_ms": 1}}`, "compare: the prediction has none of the 1 metrics the run measured (mean_ttft_ms)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Compare(tc.run, []byte(tc.pred)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

// The order holds every key once, and each is a report summary key shape.
func TestOrder(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range order {
		if seen[k] {
			t.Fatalf("%s twice", k)
		}
		seen[k] = true
	}
	if order[0] != schema.TTFT.Key(schema.Mean) || !seen[schema.E2E.Key(schema.P99)] || !seen[schema.OutputThroughputTokS] {
		t.Fatalf("order %v", order[:5])
	}
}

func TestCDF(t *testing.T) {
	records := mustParse(t, load(t, aiperfRecords)...)
	summary := mustParse(t, load(t, aiperfSummary)...)
	vllm := mustParse(t, load(t, vllmSummary)...)
	tests := []struct {
		name    string
		run     *Run
		metric  schema.Family
		n       int
		q0, v0  float64 // first point
		qn, vn  float64 // last point
		between [2]float64
	}{
		// Per request: 101 points from the samples, min to max.
		{"records ttft", records, "ttft_ms", 101, 0, 464.66410099999996, 1, 3853.857423, [2]float64{}},
		{"records e2e", records, "e2e_latency_ms", 101, 0, 7936.968269, 1, 9299.772642, [2]float64{}},
		{"records itl (every gap)", records, "itl_ms", 101, 0, 6.174672, 1, 164.617523, [2]float64{}},
		// Summary only: the stated quantiles, min (0), p1, p5, p25, …, max (1).
		{"summary ttft", summary, "ttft_ms", 10, 0, 464.66410099999996, 1, 3853.857423, [2]float64{0.5, 2369.317693}},
		{"summary itl", summary, "itl_ms", 10, 0, 6.174672, 1, 164.617523, [2]float64{0.99, 140.53429476}},
		// vLLM states median, p50 (the same point), p90 and p99.
		{"vllm summary ttft", vllm, "ttft_ms", 3, 0.5, vllm.Summary[schema.TTFT.Key(schema.Median)], 0.99, vllm.Summary[schema.TTFT.Key(schema.P99)], [2]float64{0.9, vllm.Summary[schema.TTFT.Key(schema.P90)]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			qs, vs := tc.run.CDF(tc.metric)
			if len(qs) != tc.n || len(vs) != tc.n {
				t.Fatalf("%d points (%v), want %d", len(qs), qs, tc.n)
			}
			if qs[0] != tc.q0 || !near(vs[0], tc.v0) || qs[tc.n-1] != tc.qn || !near(vs[tc.n-1], tc.vn) {
				t.Fatalf("ends (%v, %v) (%v, %v)", qs[0], vs[0], qs[tc.n-1], vs[tc.n-1])
			}
			if !slices.IsSorted(qs) || !slices.IsSorted(vs) {
				t.Fatalf("not monotone: %v %v", qs, vs)
			}
			if tc.between != [2]float64{} {
				i := slices.Index(qs, tc.between[0])
				if i < 0 || !near(vs[i], tc.between[1]) {
					t.Fatalf("q %v: %v", tc.between[0], vs)
				}
			}
		})
	}
	// The rounded-rank rule of the report: value at q is xs[round((n−1)q)].
	xs := []float64{}
	for _, q := range records.Requests {
		xs = append(xs, q.TTFTMs)
	}
	slices.Sort(xs)
	_, vs := records.CDF("ttft_ms")
	if vs[50] != xs[44] || vs[1] != xs[int(math.Round(88*0.01))] {
		t.Fatalf("rank rule: %v vs %v", vs[50], xs[44])
	}
	if q, v := records.CDF("tpot_ms"); q != nil || v != nil {
		t.Fatal("an unknown metric has a CDF")
	}
	if q, v := (&Run{}).CDF("ttft_ms"); q != nil || v != nil {
		t.Fatal("an empty run has a CDF")
	}
}
