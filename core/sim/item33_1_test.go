package sim

import (
	"bytes"
	"math"
	"testing"

	"github.com/dynosim/dynosim-web/core/report"
)

// TestItem33_1Warmup: traffic.warmup's requests run but the report's
// figures leave them out; the duration and rates are measured from the
// end of the warm-up; coverage says how many were left out; without a
// warm-up the report is byte-identical to one without the key.
func TestItem33_1Warmup(t *testing.T) {
	const cfg = `
traffic:
  source: {type: synthetic, input_tokens: {min: 200, max: 400}, output_tokens: {min: 8, max: 24}}
  load: {type: poisson, requests_per_second: 40, seed: 3}
  stop: {requests: 80}
engine: {workers: {aggregated: {timing: {type: polynomial}}}}
`
	run := func(sets ...string) (*report.Report, []byte) {
		t.Helper()
		rep, err := Predict(Inputs{Config: []byte(cfg), Sets: sets, CapturePerRequest: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range report.WallClockKeys {
			rep.Summary[k] = 0
		}
		j, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		return rep, j
	}
	base, plain := run()
	for _, tc := range []struct {
		name string
		sets []string
		// warm says whether request r is in the warm-up.
		warm func(r report.RequestRecord) bool
		from func(rs []report.RequestRecord) float64 // the measured window's start (ms)
	}{
		{"none (explicit zeros)", []string{"traffic.warmup.requests=0", "traffic.warmup.seconds=0"},
			func(report.RequestRecord) bool { return false }, nil},
		{"first 20 requests", []string{"traffic.warmup.requests=20"},
			func(r report.RequestRecord) bool { return r.UUID <= 20 },
			func(rs []report.RequestRecord) float64 { return rs[20].ArrivalTimeMs }},
		{"first 0.5 s", []string{"traffic.warmup.seconds=0.5"},
			func(r report.RequestRecord) bool { return r.ArrivalTimeMs < 500 },
			func([]report.RequestRecord) float64 { return 500 }},
		{"more than every request", []string{"traffic.warmup.requests=1000"},
			func(report.RequestRecord) bool { return true },
			func([]report.RequestRecord) float64 { return math.NaN() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, j := run(tc.sets...)
			if tc.from == nil {
				if !bytes.Equal(j, plain) {
					t.Fatal("a zero warm-up changed the report")
				}
				return
			}
			// The same requests ran: only the figures differ.
			if len(rep.Requests()) != len(base.Requests()) {
				t.Fatalf("%d requests, want %d", len(rep.Requests()), len(base.Requests()))
			}
			var n, excluded int
			var ttft, e2e, lastTerm float64
			for i, r := range rep.Requests() {
				b := base.Requests()[i]
				if r.TTFTMs == nil || b.TTFTMs == nil || *r.TTFTMs != *b.TTFTMs {
					t.Fatalf("request %d ran differently under a warm-up", r.UUID)
				}
				if r.Warmup != tc.warm(r) {
					t.Errorf("request %d: warmup %v, want %v", r.UUID, r.Warmup, !r.Warmup)
				}
				if r.Warmup {
					excluded++
					continue
				}
				n++
				ttft += *r.TTFTMs
				e2e += *r.E2ELatencyMs
				lastTerm = max(lastTerm, *r.TerminalTimeMs)
			}
			if excluded == 0 {
				t.Fatal("the case excludes nothing")
			}
			s := rep.Summary
			if rep.Coverage.WarmupExcluded != excluded {
				t.Errorf("coverage.warmup_excluded_requests %d, want %d", rep.Coverage.WarmupExcluded, excluded)
			}
			if int(s["completed_requests"]) != n || int(s["num_requests"]) != n || rep.Outcomes.Completed != n {
				t.Errorf("completed %v, num_requests %v, outcomes %d, want %d", s["completed_requests"], s["num_requests"], rep.Outcomes.Completed, n)
			}
			if n == 0 {
				if !math.IsNaN(s["mean_ttft_ms"]) && s["mean_ttft_ms"] != 0 || !math.IsNaN(s["request_throughput_rps"]) {
					t.Errorf("nothing measured: mean TTFT %v, throughput %v, want undefined", s["mean_ttft_ms"], s["request_throughput_rps"])
				}
				return
			}
			from := tc.from(rep.Requests())
			if rep.Coverage.WarmupEndMs == nil || math.Abs(*rep.Coverage.WarmupEndMs-from) > 1e-6 {
				t.Errorf("coverage.warmup_end_ms %v, want %v", rep.Coverage.WarmupEndMs, from)
			}
			near := func(key string, got, want float64) {
				if math.Abs(got-want) > 1e-6*max(1, math.Abs(want)) {
					t.Errorf("%s %v, want %v", key, got, want)
				}
			}
			near("mean_ttft_ms", s["mean_ttft_ms"], ttft/float64(n))
			near("mean_e2e_latency_ms", s["mean_e2e_latency_ms"], e2e/float64(n))
			near("duration_ms", s["duration_ms"], lastTerm-from)
			near("request_throughput_rps", s["request_throughput_rps"], float64(n)/((lastTerm-from)/1000))
			if s["mean_ttft_ms"] == base.Summary["mean_ttft_ms"] {
				t.Error("the warm-up left mean TTFT unchanged")
			}
		})
	}
}
