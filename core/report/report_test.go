package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

func ms(x float64) timing.Time { return timing.FromMs(x) }

// arrive registers the next request, placed on worker 0 rank 0.
func arrive(c *Collector, t timing.Time, input, requested int) uint64 {
	id := uint64(len(c.recs) + 1)
	c.Arrive(id, t, input, requested)
	c.Route(id, 0, 0, t, -1)
	return id
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(b), 1e-12) }

// H2: the collector example of spec §8.8.
func TestH2ITLAndPerUserThroughput(t *testing.T) {
	c := NewCollector(1, 1, false)
	id := arrive(c, 0, 10, 4)
	c.Admit(id, 0, 0, false)
	for _, x := range []float64{10, 11, 12, 110} {
		c.Token(id, ms(x), ms(x))
	}
	c.Terminal(id, ms(110), "")
	s := Build(c, RunInfo{Workers: []WorkerStats{{}}, Pools: []PoolInfo{{Name: "aggregated", Workers: 1, GPUsPerWorker: 1}}, ClockEnd: ms(110)}).Summary
	checks := []struct {
		key       string
		want, rel float64
	}{
		{schema.TPOT.Key(schema.Mean), 100.0 / 3, 1e-12},
		{schema.ITL.Key(schema.Mean), 100.0 / 3, 1e-12},
		{schema.ITL.Key(schema.Median), 1, 1e-3},
		{schema.ITL.Key(schema.P75), 98, 1e-3},
		{schema.ITL.Key(schema.P90), 98, 1e-3},
		{schema.ITL.Key(schema.P95), 98, 1e-3},
		{schema.ITL.Key(schema.Max), 98, 1e-12},
		{schema.TTST.Key(schema.Min), 1, 1e-12},
		{schema.TTST.Key(schema.Max), 1, 1e-12},
		{schema.PerUser.Key(schema.Min), 1000.0 / 98, 1e-12},
		{schema.PerUser.Key(schema.Max), 1000, 1e-12},
		{schema.TTFT.Key(schema.Mean), 10, 1e-12},
		{schema.E2E.Key(schema.Mean), 110, 1e-12},
	}
	for _, ck := range checks {
		if got := s[ck.key]; !near(got, ck.want, ck.rel) {
			t.Errorf("%s = %v, want %v", ck.key, got, ck.want)
		}
	}
}

// H2: zero-output request, worker-seconds and GPU-hours.
func TestH2ZeroOutputAndGPUHours(t *testing.T) {
	c := NewCollector(1, 1, false)
	id := arrive(c, 0, 32, 0)
	c.Admit(id, ms(5), 8, false)
	c.Terminal(id, ms(25), "")
	s := Build(c, RunInfo{Workers: []WorkerStats{{}}, Pools: []PoolInfo{{Name: "aggregated", Workers: 1, GPUsPerWorker: 4}}, ClockEnd: ms(25)}).Summary
	want := map[string]float64{
		schema.CompletedRequests: 1, schema.TotalInputTokens: 32, schema.TotalOutputTokens: 0,
		schema.DurationMs: 25, schema.DecodeWorkerSeconds: 0.025, schema.GPUHours: 0.1 / 3600,
		schema.PrefixCacheReusedRatio: 0.25,
	}
	for k, v := range want {
		if !near(s[k], v, 1e-12) {
			t.Errorf("%s = %v, want %v", k, s[k], v)
		}
	}
	// No token: its latencies are undefined (null), not 0.
	for _, k := range []string{schema.TTFT.Key(schema.Mean), schema.E2E.Key(schema.Mean), schema.ITL.Key(schema.P99)} {
		if !math.IsNaN(s[k]) {
			t.Errorf("%s = %v, want undefined", k, s[k])
		}
	}
}

// A run where every request is rejected or unfinished says so: counts by
// reason, the stop reason, and null (not 0, not huge) for undefined rates
// and latencies.
func TestAllRejectedOrUnfinished(t *testing.T) {
	c := NewCollector(3, 1, false)
	for range 3 {
		arrive(c, 0, 10, 4)
	}
	c.Terminal(1, 0, "kv_capacity")
	c.Terminal(2, 0, "max_model_len")
	rep := Build(c, RunInfo{Workers: []WorkerStats{{}}, ClockEnd: ms(0), StopReason: "max_virtual_time"})
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"completed_requests":0`, `"rejected_requests":2`, `"unfinished_requests":1`,
		`"request_throughput_rps":null`, `"mean_ttft_ms":null`, `"prefix_cache_reused_ratio":null`,
		`"rejected_by_reason": {`, `"kv_capacity": 1`, `"max_model_len": 1`, `"stop_reason": "max_virtual_time"`,
	} {
		if !strings.Contains(strings.ReplaceAll(string(js), `": `, `":`), strings.ReplaceAll(want, `": `, `":`)) {
			t.Errorf("report lacks %s", want)
		}
	}
	if tab := rep.Table(); !strings.Contains(tab, "Rejected by reason: kv_capacity 1, max_model_len 1") || !strings.Contains(tab, "n/a") {
		t.Errorf("table:\n%s", tab)
	}
}

// H2: goodput under SLAs (inclusive bounds).
func TestH2Goodput(t *testing.T) {
	run := func(sla SLA, tokens ...[]float64) map[string]float64 {
		c := NewCollector(len(tokens), 1, false)
		for _, ts := range tokens {
			id := arrive(c, 0, 1, len(ts))
			c.Admit(id, 0, 0, false)
			for _, x := range ts {
				c.Token(id, ms(x), ms(x))
			}
			c.Terminal(id, ms(ts[len(ts)-1]), "")
		}
		return Build(c, RunInfo{Workers: []WorkerStats{{}}, Pools: []PoolInfo{{Name: "aggregated", Workers: 1, GPUsPerWorker: 1}}, SLA: sla}).Summary
	}
	s := run(SLA{TTFTMs: 150, ITLMs: 30}, []float64{100, 150, 200}, []float64{100, 120, 140}, []float64{100})
	if s[schema.GoodputCompletedRequests] != 2 || !near(s[schema.GoodputRequestThroughputRPS], 10, 1e-12) || !near(s[schema.GoodputOutputThroughputTokS], 20, 1e-12) {
		t.Errorf("goodput %v %v %v", s[schema.GoodputCompletedRequests], s[schema.GoodputRequestThroughputRPS], s[schema.GoodputOutputThroughputTokS])
	}
	if s := run(SLA{ITLMs: 50}, []float64{100, 150, 200}); s[schema.GoodputCompletedRequests] != 1 {
		t.Error("ITL exactly at the bound must be good")
	}
	if s := run(SLA{ITLMs: 50}, []float64{100, 150.5, 201}); s[schema.GoodputCompletedRequests] != 0 {
		t.Error("ITL 50.5 over bound 50 must be bad")
	}
	if s := run(SLA{E2EMs: 150}, []float64{200}, []float64{120}); s[schema.GoodputCompletedRequests] != 1 {
		t.Error("e2e-only SLA")
	}
	if _, ok := run(SLA{}, []float64{1})[schema.GoodputCompletedRequests]; ok {
		t.Error("goodput keys without an SLA")
	}
}

func TestRoundedRankPercentiles(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	d := exactDist(xs)
	// ranks: p50 → round(2) = 2, p75 → round(3) = 3, p90 → round(3.6) = 4.
	if d.pct[0] != 3 || d.pct[1] != 4 || d.pct[2] != 5 || d.mean != 3 || !near(d.std, math.Sqrt(2), 1e-12) {
		t.Fatalf("dist %+v", d)
	}
	if (exactDist(nil) != dist{}) {
		t.Fatal("empty distribution must be zeros")
	}
}

func TestSketchAccuracy(t *testing.T) {
	s := newSketch()
	var m moments
	n := 100000
	for i := 1; i <= n; i++ {
		x := float64(i) / 10
		s.add(x)
		m.add(x)
	}
	for _, p := range []float64{50, 90, 99} {
		exact := float64(rank(n, p)+1) / 10
		if got := s.at(rank(n, p)); !near(got, exact, 1.001e-3) {
			t.Errorf("p%v = %v, want %v ± 0.1%%", p, got, exact)
		}
	}
}

func TestSummaryKeysAndTable(t *testing.T) {
	c := NewCollector(1, 1, true)
	id := arrive(c, 0, 10, 2)
	c.Admit(id, 0, 0, false)
	c.Token(id, ms(1), ms(1))
	c.Token(id, ms(2), ms(2))
	c.Terminal(id, ms(2), "")
	r := Build(c, RunInfo{Workers: []WorkerStats{{}}, Pools: []PoolInfo{{Name: "aggregated", Workers: 1, GPUsPerWorker: 1}}, ClockEnd: ms(2)})
	for _, k := range []string{schema.NumRequests, schema.CompletedRequests, schema.TotalInputTokens, schema.TotalOutputTokens,
		schema.DurationMs, schema.WallTimeMs, schema.RequestThroughputRPS, schema.InputThroughputTokS, schema.OutputThroughputTokS,
		schema.TotalThroughputTokS, schema.PrefillWorkerSeconds, schema.DecodeWorkerSeconds, schema.PrefillGPUsPerWorker,
		schema.DecodeGPUsPerWorker, schema.GPUHours, schema.ProcessedTokens, schema.ProcessedTokensPerS,
		schema.ProcessedOutputTokensPerS, schema.PrefixCacheReusedRatio, schema.FirstAdmissionReusedRatio,
		schema.TTFT.Key(schema.Mean), schema.TTFT.Key(schema.P99), schema.TPOT.Key(schema.Mean), schema.E2E.Key(schema.Mean), schema.ITL.Key(schema.Mean), schema.ITL.Key(schema.Max),
		schema.TTST.Key(schema.Median), schema.PerUser.Key(schema.Std), schema.NumPreemptions} {
		if _, ok := r.Summary[k]; !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
	r.SetWallTime(1000)
	if r.Summary[schema.ProcessedOutputTokensPerS] != 2 {
		t.Errorf("processed_output_tokens_per_s %v", r.Summary[schema.ProcessedOutputTokensPerS])
	}
	tab := r.Table()
	for _, want := range []string{"NVIDIA AIPerf | LLM Metrics", "Time to First Token (ms)", "Request Count (requests)", "Input Sequence Length (tokens)", "Simulator wall time (ms): 1,000"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	if lines := strings.Count(string(r.RequestsJSONL()), "\n"); lines != 1 {
		t.Errorf("requests.jsonl has %d lines", lines)
	}
	if num(1234567.891) != "1,234,567.89" || num(-0.5) != "-0.50" {
		t.Errorf("num formatting: %s %s", num(1234567.891), num(-0.5))
	}
}

// A zero-output request meets an end-to-end SLA only if its terminal time
// minus its arrival is within the bound.
func TestGoodputZeroOutputUsesTerminalTime(t *testing.T) {
	for _, c := range []struct {
		term float64
		good float64
	}{{90, 1}, {100, 1}, {130, 0}} {
		col := NewCollector(1, 1, false)
		id := arrive(col, ms(10), 32, 0)
		col.Admit(id, ms(10), 0, false)
		col.Terminal(id, ms(c.term), "")
		s := Build(col, RunInfo{Workers: []WorkerStats{{}}, ClockEnd: ms(c.term), SLA: SLA{E2EMs: 90}}).Summary
		if s[schema.GoodputCompletedRequests] != c.good {
			t.Errorf("terminal at %v ms, arrival 10 ms, bound 90 ms: good %v, want %v", c.term, s[schema.GoodputCompletedRequests], c.good)
		}
	}
}

// Per-request records write null for values that do not exist, carry the
// terminal time, and name the DP rank beside the worker.
func TestRequestRecordNulls(t *testing.T) {
	col := NewCollector(3, 2, true)
	one := arrive(col, ms(1), 8, 1) // one token, completed
	col.Admit(one, ms(2), 4, false)
	col.Token(one, ms(3), ms(5)) // its prefill ran 2–3, the first token's pass 3–5
	col.Terminal(one, ms(5), "")
	rej := uint64(2) // rejected before admission, on worker 1 rank 1
	col.Arrive(rej, ms(1), 9999, 4)
	col.Route(rej, 1, 1, ms(2), 512)
	col.Terminal(rej, ms(3), "kv_capacity")
	col.Arrive(3, ms(4), 8, 2) // never placed, unfinished
	rep := Build(col, RunInfo{Workers: []WorkerStats{{}, {}}, ClockEnd: ms(6)})
	lines := strings.Split(strings.TrimSpace(string(rep.RequestsJSONL())), "\n")
	want := []string{
		`{"uuid":1,"arrival_time_ms":1,"first_admit_ms":2,"first_token_ms":5,"last_token_ms":5,"terminal_time_ms":5,"ttft_ms":4,"ttst_ms":null,"itl_ms":null,"e2e_latency_ms":4,"input_length":8,"requested_output_length":1,"output_length":1,"reused_input_tokens":4,"worker":0,"dp_rank":0,"terminal_status":"completed","rejection_reason":null,"router_overlap_tokens":null,"router_queue_ms":0,"ttft_breakdown_ms":{"frontend":0,"router_queue":0,"engine_queue":1,"preemption":0,"prefill":1,"first_token_pass":2}}`,
		`{"uuid":2,"arrival_time_ms":1,"first_admit_ms":null,"first_token_ms":null,"last_token_ms":null,"terminal_time_ms":3,"ttft_ms":null,"ttst_ms":null,"itl_ms":null,"e2e_latency_ms":null,"input_length":9999,"requested_output_length":4,"output_length":0,"reused_input_tokens":0,"worker":1,"dp_rank":1,"terminal_status":"rejected","rejection_reason":"kv_capacity","router_overlap_tokens":512,"router_queue_ms":1,"ttft_breakdown_ms":null}`,
		`{"uuid":3,"arrival_time_ms":4,"first_admit_ms":null,"first_token_ms":null,"last_token_ms":null,"terminal_time_ms":null,"ttft_ms":null,"ttst_ms":null,"itl_ms":null,"e2e_latency_ms":null,"input_length":8,"requested_output_length":2,"output_length":0,"reused_input_tokens":0,"worker":null,"dp_rank":null,"terminal_status":"unfinished","rejection_reason":null,"router_overlap_tokens":null,"router_queue_ms":null,"ttft_breakdown_ms":null}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d records", len(lines))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("record %d:\n got %s\nwant %s", i+1, lines[i], want[i])
		}
	}
}

// A report read back from its JSON has the same summary, null as NaN.
func TestSummaryRoundTrip(t *testing.T) {
	s := Summary{"a": 1.5, "b": math.NaN()}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || back["a"] != 1.5 || !math.IsNaN(back["b"]) || len(back) != 2 {
		t.Fatalf("%s → %v (%v)", b, back, err)
	}
}
