package measured

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/workload"
)

// The fixtures (testdata/README.md says where each comes from).
const (
	aiperfSummary = "testdata/aiperf-run1/profile_export_aiperf.json"
	aiperfRecords = "testdata/aiperf-run1/profile_export.jsonl"
	vllmDetailed  = "testdata/vllm-synthetic/vllm-4.0qps-Llama-3.1-8B-Instruct-detailed.json"
	vllmSummary   = "testdata/vllm-synthetic/vllm-4.0qps-Llama-3.1-8B-Instruct-summary.json"
	vllmReal      = "testdata/vllm-llm-d/benchmark_2025-05-13_04-55-27.json" // a real run, summary only
)

func load(t testing.TB, paths ...string) []File {
	t.Helper()
	var fs []File
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, File{Name: filepath.Base(p), Data: data})
	}
	return fs
}

func mustParse(t testing.TB, fs ...File) *Run {
	t.Helper()
	r, err := Parse(fs...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// Values read from the AIPerf summary fixture by hand.
var aiperfWant = map[string]float64{
	schema.TTFT.Key(schema.Mean):     2343.219436988764,
	schema.TTFT.Key(schema.P99):      3833.3894000399996,
	schema.TTST.Key(schema.Median):   136.642199,
	schema.ITL.Key(schema.Mean):      27.755153106189347, // inter_chunk_latency
	schema.ITL.Key(schema.P99):       140.53429476,
	schema.TPOT.Key(schema.Mean):     27.763065454471807, // inter_token_latency (per request)
	schema.TPOT.Key(schema.Max):      34.8605763625,
	schema.E2E.Key(schema.Mean):      9059.654633033708,
	schema.E2E.Key(schema.Std):       220.21827319725128,
	schema.RequestThroughputRPS:      9.551622221540914,
	schema.OutputThroughputTokS:      2320.7222350404572,
	schema.CompletedRequests:         89,
	schema.TotalInputTokens:          48950,
	schema.TotalOutputTokens:         21624,
	schema.DurationMs:                9317.788951, // 9.317788951 sec
	schema.InputLen.Key(schema.Mean): 550,
	schema.OutputLen.Key(schema.Min): 193,
}

func TestParseAIPerfSummary(t *testing.T) {
	r := mustParse(t, load(t, aiperfSummary)...)
	if r.Tool != ToolAIPerf || len(r.Requests) != 0 || len(r.Files) != 1 {
		t.Fatalf("tool %q, %d requests, files %v", r.Tool, len(r.Requests), r.Files)
	}
	for k, want := range aiperfWant {
		if got, ok := r.Summary[k]; !ok || !near(got, want) {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	for k := range r.Summary {
		if !inOrder(k) {
			t.Errorf("summary key %s is not one Compare knows", k)
		}
	}
}

func inOrder(k string) bool {
	for _, o := range order {
		if o == k {
			return true
		}
	}
	return false
}

func TestParseAIPerfRecords(t *testing.T) {
	r := mustParse(t, load(t, aiperfRecords)...)
	// 100 records: 11 cancelled (error 499) are left out.
	if len(r.Requests) != 89 {
		t.Fatalf("%d requests, want 89", len(r.Requests))
	}
	first, last := r.Requests[0], r.Requests[88]
	if first.StartMs != 0 || first.InputTokens != 550 || first.OutputTokens != 247 || !near(first.TTFTMs, 730.147344) || !near(first.E2EMs, 8877.620132) {
		t.Errorf("first request %+v", first)
	}
	if !near(last.StartMs, 20.473932) || !near(last.TTFTMs, 3853.857423) || !near(last.ITLMs, 22.127876406504065) {
		t.Errorf("last request %+v", last)
	}
	for i := 1; i < len(r.Requests); i++ {
		if r.Requests[i].StartMs < r.Requests[i-1].StartMs {
			t.Fatalf("request %d starts before %d", i, i-1)
		}
	}
	// From the records alone we compute what AIPerf's summary states.
	for _, k := range []string{schema.TTFT.Key(schema.Mean), schema.TTFT.Key(schema.P99), schema.ITL.Key(schema.P90), schema.ITL.Key(schema.Mean), schema.TPOT.Key(schema.Mean), schema.E2E.Key(schema.P75),
		schema.RequestThroughputRPS, schema.OutputThroughputTokS, schema.DurationMs, schema.CompletedRequests, schema.TotalOutputTokens} {
		if got, want := r.Summary[k], aiperfWant[k]; want != 0 && math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s from records = %v, summary says %v", k, got, want)
		}
	}
	if got := r.Summary[schema.ITL.Key(schema.P90)]; !near(got, 24.875479600000002) {
		t.Errorf("p90_itl_ms from records = %v", got)
	}
}

func TestParseAIPerfBoth(t *testing.T) {
	for _, fs := range [][]File{load(t, aiperfSummary, aiperfRecords), load(t, aiperfRecords, aiperfSummary)} {
		r := mustParse(t, fs...)
		if len(r.Requests) != 89 || len(r.Files) != 2 || r.Summary[schema.TTFT.Key(schema.Mean)] != aiperfWant[schema.TTFT.Key(schema.Mean)] {
			t.Fatalf("%d requests, files %v, mean_ttft_ms %v", len(r.Requests), r.Files, r.Summary[schema.TTFT.Key(schema.Mean)])
		}
		if _, ok := r.Summary[schema.InputThroughputTokS]; ok {
			t.Error("with a summary, the summary alone gives the values")
		}
	}
}

// A hand-written file in the current AIPerf layout (schema 1.x,
// GenAI-Perf's names; shaped after AIPerf 0.10's output), for the paths
// the 2025-10 fixture cannot reach: top-level metrics, request_start_ns,
// time_to_first_token, ns and sec units.
const newSummary = `{"schema_version": "1.3", "aiperf_version": "0.10.0",
 "request_throughput": {"unit": "requests/sec", "avg": 0.75},
 "time_to_first_token": {"unit": "ns", "avg": 154264323.8, "p50": 136486096.5, "p99": 292496886.4, "min": 74400987, "max": 341897484},
 "inter_token_latency": {"unit": "ms", "avg": 5.67, "p90": 6.11},
 "request_latency": {"unit": "ms", "avg": 2617.76, "p99": 10438.08},
 "benchmark_duration": {"unit": "sec", "avg": 128.677665177},
 "telemetry_data": {"summary": {}}, "was_cancelled": false}`

const newRecords = `{"metadata":{"session_num":0,"request_start_ns":1000000000000,"request_end_ns":1000400000000,"benchmark_phase":"warmup"},"metrics":{"input_sequence_length":{"value":10,"unit":"tokens"},"output_sequence_length":{"value":5,"unit":"tokens"}},"error":null}
{"metadata":{"session_num":1,"request_start_ns":1000500000000,"request_end_ns":1000900000000,"benchmark_phase":"profiling"},"metrics":{"input_sequence_length":{"value":600,"unit":"tokens"},"time_to_first_token":{"value":100.5,"unit":"ms"},"request_latency":{"value":400,"unit":"ms"},"output_sequence_length":{"value":4,"unit":"tokens"},"inter_chunk_latency":{"value":[100,100,99.5],"unit":"ms"}},"error":null}
{"metadata":{"session_num":2,"request_start_ns":1000250000000,"benchmark_phase":"profiling"},"metrics":{"input_sequence_length":{"value":30,"unit":"tokens"},"time_to_first_token":{"value":0.02,"unit":"sec"},"request_latency":{"value":50,"unit":"ms"},"output_sequence_length":{"value":1,"unit":"tokens"}},"error":null}
`

func TestParseAIPerfCurrentLayout(t *testing.T) {
	r := mustParse(t, File{"profile_export_aiperf.json", []byte(newSummary)})
	for k, want := range map[string]float64{schema.TTFT.Key(schema.Mean): 154.2643238, schema.TTFT.Key(schema.Median): 136.4860965, schema.TTFT.Key(schema.Min): 74.400987,
		schema.TPOT.Key(schema.Mean): 5.67, schema.TPOT.Key(schema.P90): 6.11, schema.E2E.Key(schema.P99): 10438.08, schema.DurationMs: 128677.665177, schema.RequestThroughputRPS: 0.75} {
		if got := r.Summary[k]; !near(got, want) {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	r = mustParse(t, File{"profile_export.jsonl", []byte(newRecords)})
	if len(r.Requests) != 2 { // the warmup record is left out
		t.Fatalf("%d requests, want 2", len(r.Requests))
	}
	a, b := r.Requests[0], r.Requests[1] // start order, not file order
	if a.InputTokens != 30 || a.StartMs != 0 || a.TTFTMs != 20 || !math.IsNaN(a.ITLMs) {
		t.Errorf("first %+v", a)
	}
	if b.InputTokens != 600 || b.StartMs != 250 || !near(b.ITLMs, 299.5/3) || b.E2EMs != 400 { // (E2E − TTFT) / (OSL − 1)
		t.Errorf("second %+v", b)
	}
	// Span: first start (250 s) to the last end (request_end_ns 900 s).
	if got := r.Summary[schema.DurationMs]; got != 650 {
		t.Errorf("duration_ms = %v, want 650", got)
	}
	if q, v := r.CDF("itl_ms"); len(q) != 101 || v[0] != 99.5 || v[100] != 100 {
		t.Errorf("itl CDF %v %v", q, v)
	}
}

func TestParseVLLM(t *testing.T) {
	r := mustParse(t, load(t, vllmDetailed)...)
	if r.Tool != ToolVLLM || len(r.Requests) != 11 { // 12 prompts, request 8 failed
		t.Fatalf("tool %q, %d requests", r.Tool, len(r.Requests))
	}
	var raw map[string]any
	if err := json.Unmarshal(load(t, vllmDetailed)[0].Data, &raw); err != nil {
		t.Fatal(err)
	}
	f := func(k string) float64 { return raw[k].(float64) }
	for k, want := range map[string]float64{
		schema.TTFT.Key(schema.Mean): f("mean_ttft_ms"), schema.TTFT.Key(schema.Median): f("median_ttft_ms"), schema.TTFT.Key(schema.P90): f("p90_ttft_ms"),
		schema.ITL.Key(schema.P99): f("p99_itl_ms"), schema.TPOT.Key(schema.Mean): f("mean_tpot_ms"), schema.E2E.Key(schema.Std): f("std_e2el_ms"),
		schema.RequestThroughputRPS: f("request_throughput"), schema.OutputThroughputTokS: f("output_throughput"),
		schema.TotalThroughputTokS: f("total_token_throughput"), schema.CompletedRequests: 11, schema.DurationMs: 1000 * f("duration"),
	} {
		if got := r.Summary[k]; !near(got, want) {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	starts := raw["start_times"].([]any)
	ttfts, lats, ins := raw["ttfts"].([]any), raw["latencies"].([]any), raw["input_lens"].([]any)
	q := r.Requests[1]
	if !near(q.StartMs, 1000*(starts[1].(float64)-starts[0].(float64))) || !near(q.TTFTMs, 1000*ttfts[1].(float64)) ||
		!near(q.E2EMs, 1000*lats[1].(float64)) || q.InputTokens != int(ins[1].(float64)) {
		t.Errorf("request 1 %+v", q)
	}
	// The lengths' statistics come from the lists (vLLM states none).
	if got := r.Summary[schema.TotalInputTokens]; got != 4882 || r.Summary[schema.InputLen.Key(schema.Max)] != 667 {
		t.Errorf("total_input_tokens %v, max_input_sequence_length %v", got, r.Summary[schema.InputLen.Key(schema.Max)])
	}

	s := mustParse(t, load(t, vllmSummary)...)
	if len(s.Requests) != 0 || s.Summary[schema.TTFT.Key(schema.Mean)] != r.Summary[schema.TTFT.Key(schema.Mean)] {
		t.Fatalf("summary-only: %d requests, mean_ttft_ms %v", len(s.Requests), s.Summary[schema.TTFT.Key(schema.Mean)])
	}
	// Its trace: the count and the mean lengths at the request rate.
	tr, err := s.Trace()
	if err != nil || bytes.Count(tr, []byte("\n")) != 11 || !strings.Contains(s.TraceNote(), "mean prompt and output lengths") {
		t.Errorf("Trace of a summary-only result: %v, %d lines, note %q", err, bytes.Count(tr, []byte("\n")), s.TraceNote())
	}
}

// A real result (llm-d-benchmark, vLLM benchmark_serving.py, summary only,
// old keys with the stray "request_goodput:"): its statistics, its stated
// percentiles as the CDF, and a trace of 200 requests of 7,999 prompt and
// 200 output tokens at 3.6 requests/s.
func TestParseRealVLLMResult(t *testing.T) {
	r := mustParse(t, load(t, vllmReal)...)
	for k, want := range map[string]float64{
		schema.TTFT.Key(schema.Mean): 243.57119981985306, schema.TTFT.Key(schema.Median): 244.08852099440992, schema.TTFT.Key(schema.P95): 257.0488001947524, schema.TTFT.Key(schema.P99): 261.66544687526766,
		schema.TPOT.Key(schema.Mean): 16.170790800581987, schema.ITL.Key(schema.P99): 216.5980374556966, schema.CompletedRequests: 200, schema.TotalInputTokens: 1599800,
		schema.DurationMs: 57421.71942605637, schema.OutputThroughputTokS: 696.6005267659943,
	} {
		if got, ok := r.Summary[k]; !ok || !near(got, want) {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, want)
		}
	}
	if r.Tool != ToolVLLM || len(r.Requests) != 0 {
		t.Fatalf("tool %q, %d requests", r.Tool, len(r.Requests))
	}
	qs, vs := r.CDF("ttft_ms")
	if len(qs) != 3 || qs[0] != 0.5 || qs[2] != 0.99 || vs[2] != 261.66544687526766 {
		t.Errorf("CDF %v %v", qs, vs)
	}
	tr, err := r.Trace()
	if err != nil {
		t.Fatal(err)
	}
	wl, err := workload.ReadMooncake("t.jsonl", tr, TraceBlock)
	if err != nil || wl.Requests() != 200 {
		t.Fatalf("trace: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(tr), []byte("\n"))
	if !bytes.HasPrefix(lines[1], []byte(`{"timestamp":277.777778,"input_length":7999,"output_length":200,`)) {
		t.Errorf("second request %s", lines[1])
	}
	if !strings.Contains(r.TraceNote(), "3.6/s") {
		t.Errorf("note %q", r.TraceNote())
	}
}

// Before start_times and latencies (vLLM before 2026-01), arrivals are
// spaced at 1/request_rate and E2E is TTFT + the gaps.
func TestParseVLLMWithoutStartTimes(t *testing.T) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(load(t, vllmDetailed)[0].Data, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "start_times")
	delete(raw, "latencies")
	old, _ := json.Marshal(raw)
	r := mustParse(t, File{"old.json", old})
	full := mustParse(t, load(t, vllmDetailed)...)
	// Request 8 (index 7) failed: index 8's slot is 8 × 250 ms.
	if r.Requests[7].StartMs != 8*250 || r.Requests[6].StartMs != 6*250 {
		t.Errorf("starts %v, %v", r.Requests[6].StartMs, r.Requests[7].StartMs)
	}
	if math.Abs(r.Requests[0].E2EMs-full.Requests[0].E2EMs) > 1e-6 {
		t.Errorf("E2E from gaps %v, from latencies %v", r.Requests[0].E2EMs, full.Requests[0].E2EMs)
	}
	raw["request_rate"] = json.RawMessage(`"inf"`)
	burst, _ := json.Marshal(raw)
	for _, q := range mustParse(t, File{"burst.json", burst}).Requests {
		if q.StartMs != 0 {
			t.Fatalf("rate inf: a request starts at %v", q.StartMs)
		}
	}
}

// Python writes NaN for an undefined statistic: it reads as not measured.
func TestNaNIsNotMeasured(t *testing.T) {
	r := mustParse(t, File{"v.json", []byte(`{"completed": 2, "duration": 1.5, "mean_ttft_ms": NaN, "std_ttft_ms": NaN, "median_ttft_ms": 20.5, "label": "NaN in a string"}`)})
	if _, ok := r.Summary[schema.TTFT.Key(schema.Mean)]; ok || r.Summary[schema.TTFT.Key(schema.Median)] != 20.5 || r.Summary[schema.DurationMs] != 1500 {
		t.Fatalf("summary %v", r.Summary)
	}
}

func TestParseErrors(t *testing.T) {
	good := `{"metadata":{"request_start_ns":1},"metrics":{"input_sequence_length":{"value":10,"unit":"tokens"},"output_sequence_length":{"value":5,"unit":"tokens"}},"error":null}`
	tests := []struct {
		name  string
		files []File
		want  string
	}{
		{"no files", nil, "measured: no files"},
		{"empty", []File{{"a.json", nil}}, "a.json: empty file"},
		{"not JSON", []File{{"a.csv", []byte("timestamp,input_length\n1,2\n")}}, "a.csv: not a JSON object"},
		{"bad JSON names the line", []File{{"a.json", []byte("{\n\"mean_ttft_ms\": 1,\n\"x\": ]\n}")}}, "a.json:3: invalid JSON"},
		{"wrong file", []File{{"prediction.json", []byte(`{"summary": {"mean_ttft_ms": 1}, "outcomes": {}}`)}}, "prediction.json: not an AIPerf or vllm bench serve export (keys: outcomes, summary)"},
		{"a Mooncake trace", []File{{"t.jsonl", []byte(`{"timestamp":0,"input_length":8,"output_length":2,"hash_ids":[1]}` + "\n")}}, "t.jsonl: not an AIPerf or vllm bench serve export"},
		{"Infinity", []File{{"v.json", []byte("{\"completed\": 1,\n\"duration\": Infinity}")}}, "v.json:2: Infinity is not a measured value"},
		{"all NaN", []File{{"v.json", []byte(`{"mean_ttft_ms": NaN, "mean_e2el_ms": NaN}`)}}, "v.json: holds no metric"},
		{"negative latency", []File{{"v.json", []byte(`{"mean_ttft_ms": -3}`)}}, "v.json: mean_ttft_ms: must be a finite number ≥ 0, got -3"},
		{"string statistic", []File{{"v.json", []byte(`{"mean_ttft_ms": "fast"}`)}}, `v.json: mean_ttft_ms: must be a number, got "fast"`},
		{"vLLM list lengths", []File{{"v.json", []byte(`{"completed": 2, "input_lens": [1, 2], "output_lens": [3, 4], "ttfts": [0.1]}`)}}, "v.json: ttfts: 1 values, want 2"},
		{"vLLM output_lens missing", []File{{"v.json", []byte(`{"input_lens": [1, 2]}`)}}, "v.json: output_lens: missing"},
		{"vLLM negative ttft", []File{{"v.json", []byte(`{"input_lens": [1, 2], "output_lens": [3, 4], "ttfts": [0.1, -1]}`)}}, "v.json: ttfts[1]: must be a finite number ≥ 0"},
		{"vLLM fractional length", []File{{"v.json", []byte(`{"input_lens": [1.5], "output_lens": [3]}`)}}, "v.json: input_lens[0]: must be an integer"},
		{"vLLM itls not lists", []File{{"v.json", []byte(`{"input_lens": [1], "output_lens": [3], "itls": [0.1]}`)}}, "v.json: itls: must be a list of lists"},
		{"AIPerf bad unit", []File{{"s.json", []byte(`{"time_to_first_token": {"unit": "parsecs", "avg": 1}}`)}}, `s.json: time_to_first_token.unit: want ns, us, ms or sec, got "parsecs"`},
		{"AIPerf throughput unit", []File{{"s.json", []byte(`{"request_throughput": {"unit": "requests/min", "avg": 1}}`)}}, `s.json: request_throughput.unit: want requests/sec or requests/s`},
		{"AIPerf stat not a number", []File{{"s.json", []byte(`{"request_latency": {"unit": "ms", "p99": [1]}}`)}}, "s.json: request_latency.p99: must be a number"},
		{"AIPerf metric not an object", []File{{"s.json", []byte(`{"records": {"ttft": 5}}`)}}, "s.json: ttft: must be an object"},
		{"JSONL bad line", []File{{"p.jsonl", []byte(good + "\n" + good + "\n{\"metadata\": \n")}}, "p.jsonl:3: invalid JSON"},
		{"JSONL missing start", []File{{"p.jsonl", []byte(good + "\n" + `{"metadata":{},"metrics":{}}`)}}, "p.jsonl:2: metadata.request_start_ns: missing"},
		{"JSONL missing metadata", []File{{"p.jsonl", []byte(good + "\n" + `{"metrics":{}}`)}}, "p.jsonl:2: metadata: missing"},
		{"JSONL negative value", []File{{"p.jsonl", []byte(strings.Replace(good, `"value":10`, `"value":-10`, 1))}}, "p.jsonl:1: metrics.input_sequence_length: must be a finite number ≥ 0, got -10"},
		{"JSONL missing length", []File{{"p.jsonl", []byte(`{"metadata":{"request_start_ns":1},"metrics":{"input_sequence_length":{"value":10}}}`)}}, "p.jsonl:1: metrics.output_sequence_length: missing"},
		{"JSONL fractional length", []File{{"p.jsonl", []byte(strings.Replace(good, `"value":5`, `"value":5.5`, 1))}}, "p.jsonl:1: metrics.output_sequence_length: must be an integer"},
		{"JSONL bad timestamp", []File{{"p.jsonl", []byte(strings.Replace(good, `"request_start_ns":1`, `"request_start_ns":"soon"`, 1))}}, "p.jsonl:1: metadata.request_start_ns: must be a timestamp in ns"},
		{"JSONL chunk list", []File{{"p.jsonl", []byte(strings.Replace(good, `"metrics":{`, `"metrics":{"inter_chunk_latency":{"value":[1,-2],"unit":"ms"},`, 1))}}, "p.jsonl:1: metrics.inter_chunk_latency: value[1]: must be a finite number ≥ 0"},
		{"JSONL all failed", []File{{"p.jsonl", []byte(`{"metadata":{"request_start_ns":1},"metrics":{},"error":{"code":499}}`)}}, "p.jsonl: no successful profiling request"},
		{"two summaries", load(t, aiperfSummary, aiperfSummary), "profile_export_aiperf.json and profile_export_aiperf.json: both are AIPerf summaries"},
		{"vLLM with AIPerf", load(t, vllmSummary, aiperfRecords), "vllm-4.0qps-Llama-3.1-8B-Instruct-summary.json: a vllm bench serve result is a whole run on its own; parse it without profile_export.jsonl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.files...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestMaxTokensIsTheReaders(t *testing.T) {
	if maxTokens != workload.MaxRequestTokens {
		t.Fatalf("maxTokens %d, workload.MaxRequestTokens %d", maxTokens, workload.MaxRequestTokens)
	}
}

func TestCleanJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": NaN}`, `{"a": null}`},
		{`{"a": [NaN, 1, NaN]}`, `{"a": [null, 1, null]}`},
		{`{"NaN": "NaN \" NaN"}`, `{"NaN": "NaN \" NaN"}`},
		{`{"a": -1}`, `{"a": -1}`},
	}
	for _, tc := range tests {
		got, err := cleanJSON("x", []byte(tc.in))
		if err != nil || !bytes.Equal(got, []byte(tc.want)) {
			t.Errorf("cleanJSON(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
