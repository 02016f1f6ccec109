package sim

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

func testTrace(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/conversation_400.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const golden4 = `
traffic:
  source: {type: trace, format: mooncake, block_size: 512}
  load: {type: trace_timestamps, speedup: 4}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 4}
      scheduler: {max_sequences: 64}
      kv_cache: {block_size: 64, capacity: {type: fixed, blocks: 2048}}
      timing: {type: polynomial}
evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}
`

func predictJSON(t testing.TB, in Inputs) []byte {
	t.Helper()
	rep, err := Predict(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// The first 400 rows of the public conversation trace on 4 workers under
// KV pressure give the checked-in report, byte for byte, every time.
func TestGoldenReport(t *testing.T) {
	in := Inputs{Config: []byte(golden4), Trace: testTrace(t), TraceName: "conversation_400.jsonl", CapturePerRequest: true}
	js := predictJSON(t, in)
	if again := predictJSON(t, in); !bytes.Equal(js, again) {
		t.Fatal("two runs differ")
	}
	checkGolden(t, "golden_conversation_400_4w.json", js)
	var rep struct {
		Summary map[string]float64 `json:"summary"`
		Workers []struct {
			Peak  int `json:"peak_active_blocks"`
			Total int `json:"total_blocks"`
		} `json:"workers"`
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Summary[schema.NumPreemptions] == 0 {
		t.Error("the golden config is meant to be under KV pressure (preemptions > 0)")
	}
}

// Conservation on whole traces: every request completes or is rejected,
// output tokens equal the trace's, KV blocks never exceed capacity.
func TestConservation(t *testing.T) {
	cases := []struct{ name, rel, cfg string }{
		{"conversation slice, tight pool", "", golden4},
		{"conversation, 8 workers", "mooncake/conversation_trace.jsonl", benchConfig},
		{"azure code, 8 workers, small pool", "azure/AzureLLMInferenceTrace_code.csv",
			"engine: {workers: {aggregated: {parallelism: {replicas: 8}, kv_cache: {capacity: {blocks: 256}}}}}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			trace, name := testTrace(t), "conversation_400.jsonl"
			if tc.rel != "" {
				if testing.Short() {
					t.Skip("whole trace")
				}
				trace, name = sharedTrace(t, tc.rel), filepath.Base(tc.rel)
			}
			rep, err := Predict(Inputs{Config: []byte(tc.cfg), Trace: trace, TraceName: name, CapturePerRequest: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := rep.Summary
			wantOut, done := 0, 0
			for _, r := range rep.Requests() {
				switch r.TerminalStatus {
				case "completed":
					done++
					if r.OutputLength != r.RequestedOutputLength {
						t.Fatalf("request %d: %d of %d tokens", r.UUID, r.OutputLength, r.RequestedOutputLength)
					}
					wantOut += r.RequestedOutputLength
				case "rejected":
					done++
				default:
					t.Fatalf("request %d unfinished", r.UUID)
				}
			}
			if done != int(s[schema.NumRequests]) || float64(wantOut) != s[schema.TotalOutputTokens] {
				t.Fatalf("done %d of %v, output %d vs %v", done, s[schema.NumRequests], wantOut, s[schema.TotalOutputTokens])
			}
			if s[schema.CompletedRequests] != s[schema.NumRequests] {
				t.Fatalf("%v rejected", s[schema.NumRequests]-s[schema.CompletedRequests])
			}
			for _, w := range rep.Workers {
				if w.PeakActiveBlock > w.TotalBlocks {
					t.Fatalf("worker %d peaked at %d of %d blocks", w.Worker, w.PeakActiveBlock, w.TotalBlocks)
				}
			}
		})
	}
}

// A hand-computed single-request timeline: TTFT, TPOT and E2E follow the
// polynomial model to 1e-6 ms.
func TestSingleRequestTimeline(t *testing.T) {
	const cfg = `
traffic: {source: {type: synthetic, input_tokens: 100, output_tokens: 3}, stop: {requests: 1}}
engine: {workers: {aggregated: {kv_cache: {capacity: {blocks: 1000}}, timing: {type: polynomial}}}}
`
	rep, err := Predict(Inputs{Config: []byte(cfg)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := func(ms float64) float64 { return math.Round(ms*1e6) / 1e6 } // per-duration quantization
	prefill := func(T float64) float64 { return 4.209989e-7*T*T + 1.518344e-2*T + 16.50142 }
	decode := func(active float64) float64 {
		p := active / (1000 * 64)
		return -25.74*p*p + 54.01*p + 5.74
	}
	// Pass 1 prefills 100 tokens and samples token 1 over 100 KV tokens;
	// passes 2 and 3 decode over 101 and 102 tokens.
	t1 := ns(prefill(100)) + ns(decode(100))
	t2 := t1 + ns(decode(101))
	t3 := t2 + ns(decode(102))
	s := rep.Summary
	for _, c := range []struct {
		key  string
		want float64
	}{{schema.TTFT.Key(schema.Mean), t1}, {schema.E2E.Key(schema.Mean), t3}, {schema.TPOT.Key(schema.Mean), (t3 - t1) / 2}, {schema.DurationMs, t3}, {schema.ITL.Key(schema.Mean), (t3 - t1) / 2}} {
		if math.Abs(s[c.key]-c.want) > 1e-6 {
			t.Errorf("%s = %.9f, want %.9f", c.key, s[c.key], c.want)
		}
	}
}

func TestBadInputs(t *testing.T) {
	goodTrace := []byte(`{"timestamp":0,"input_length":8,"output_length":2,"hash_ids":[1]}` + "\n")
	tests := []struct {
		name  string
		cfg   string
		trace string
		want  string
	}{
		{"malformed line", "", "{\"timestamp\":0,\"output_length\":1,\"hash_ids\":[1]}\n{bad", "t.jsonl:2: invalid JSON"},
		{"missing hash_ids", "", `{"timestamp":0,"output_length":1}`, "t.jsonl:1: hash_ids: missing"},
		{"negative length", "", `{"timestamp":0,"output_length":-3,"hash_ids":[1]}`, "t.jsonl:1: output_length: must be an integer ≥ 0, got -3"},
		{"non-integer hash id", "", `{"timestamp":0,"output_length":1,"hash_ids":[0.5]}`, "t.jsonl:1: hash_ids[0]: must be an integer ≥ 0"},
		{"unknown key", "engine: {wokers: {}}", "", "c.yaml:1: engine.wokers: unknown key"},
		{"zero workers", "engine: {workers: {aggregated: {parallelism: {replicas: 0}}}}", "", "engine.workers.aggregated.parallelism.replicas: must be ≥ 1"},
		{"block size 1", "engine: {workers: {aggregated: {kv_cache: {block_size: 1}}}}", "", "kv_cache.block_size: must be ≥ 2"},
		{"trace path without file access", "traffic: {source: {type: trace, paths: [x.jsonl]}}", "-", "traffic.source.paths[0]: x.jsonl: no file access here"},
		{"garbage bytes", "", "\x00\x01\x02garbage", "t.jsonl:1: invalid JSON"},
	}
	for _, tc := range tests {
		in := Inputs{Config: []byte(tc.cfg), ConfigName: "c.yaml", Trace: goodTrace, TraceName: "t.jsonl"}
		switch tc.trace {
		case "-":
			in.Trace = nil
		case "":
		default:
			in.Trace = []byte(tc.trace)
		}
		_, err := Predict(in, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLimitsAndCancel(t *testing.T) {
	in := Inputs{Trace: testTrace(t), TraceName: "c.jsonl", Limits: Limits{MaxRequests: 100}}
	if _, err := Predict(in, nil); err == nil || !strings.Contains(err.Error(), "run too large") {
		t.Fatalf("limit: %v", err)
	}
	calls := 0
	_, err := Predict(Inputs{Trace: testTrace(t), TraceName: "c.jsonl"}, func(p Progress) bool {
		calls++
		if p.Total != 400 {
			t.Errorf("total %d", p.Total)
		}
		return calls < 3
	})
	if err != ErrCanceled {
		t.Fatalf("cancel: %v", err)
	}
}

// Data-parallel ranks: each rank has its own scheduler and pool; round robin
// picks the worker, then that worker's next rank.
func TestDataParallelRanks(t *testing.T) {
	cfg := `
traffic: {source: {type: synthetic, input_tokens: 256, output_tokens: 8}, stop: {requests: 64}, load: {type: concurrency, concurrency: 64}}
engine: {workers: {aggregated: {parallelism: {replicas: 2, attention_data: 4}, scheduler: {max_sequences: 4}, kv_cache: {capacity: {blocks: 64}}}}}
`
	rep, err := Predict(Inputs{Config: []byte(cfg), CapturePerRequest: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary[schema.CompletedRequests] != 64 || rep.Summary[schema.DecodeGPUsPerWorker] != 4 {
		t.Fatalf("summary %v", rep.Summary)
	}
	for _, w := range rep.Workers {
		// 4 ranks × 64 blocks each, and 32 requests per worker.
		if w.TotalBlocks != 256 || w.Requests != 32 {
			t.Fatalf("worker %+v", w)
		}
	}
	// With max_sequences 4 per rank, 16 requests start at once per worker:
	// 32 requests in the first wave across both workers.
	first := *rep.Requests()[0].FirstTokenMs
	n := 0
	for _, r := range rep.Requests() {
		if *r.FirstTokenMs == first {
			n++
		}
	}
	if n != 32 {
		t.Fatalf("%d requests in the first wave, want 32", n)
	}
}

// L7: the arrival mode and seed change arrival times only; the requests
// themselves stay the same.
func TestL7ArrivalsChangeOnlyTimestamps(t *testing.T) {
	base := "traffic: {source: {type: synthetic, input_tokens: 64, output_tokens: 4}, stop: {requests: 50}, load: "
	run := func(load string) []float64 {
		rep, err := Predict(Inputs{Config: []byte(base + load + "}"), CapturePerRequest: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var arr []float64
		for _, r := range rep.Requests() {
			if r.InputLength != 64 || r.OutputLength != 4 {
				t.Fatalf("request changed: %+v", r)
			}
			arr = append(arr, r.ArrivalTimeMs)
		}
		return arr
	}
	a, b, c := run("{type: poisson, requests_per_second: 5, seed: 1}"), run("{type: poisson, requests_per_second: 5, seed: 1}"), run("{type: poisson, requests_per_second: 5, seed: 2}")
	if !slicesEqual(a, b) || slicesEqual(a, c) {
		t.Fatal("poisson arrivals must depend on the seed only")
	}
	burst := run("{type: concurrency, concurrency: 50}") // a rate of 0 is an error now (issue 11)
	if burst[len(burst)-1] != 0 {
		t.Fatalf("burst arrivals %v", burst[:3])
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A chunked prefill timeline by hand: 300 prompt tokens with a 128-token
// budget take three prefill passes (T = 128, 128, 44); the last one also
// samples the first token.
func TestChunkedPrefillTimeline(t *testing.T) {
	const cfg = `
traffic: {source: {type: synthetic, input_tokens: 300, output_tokens: 2}, stop: {requests: 1}}
engine: {workers: {aggregated: {scheduler: {max_batched_tokens: 128}, kv_cache: {capacity: {blocks: 500}}, timing: {type: polynomial}}}}
`
	rep, err := Predict(Inputs{Config: []byte(cfg)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := func(ms float64) float64 { return math.Round(ms*1e6) / 1e6 }
	prefill := func(T float64) float64 { return ns(4.209989e-7*T*T + 1.518344e-2*T + 16.50142) }
	decode := func(active float64) float64 {
		p := active / (500 * 64)
		return ns(-25.74*p*p + 54.01*p + 5.74)
	}
	ttft := prefill(128) + prefill(128) + prefill(44) + decode(300)
	e2e := ttft + decode(301)
	s := rep.Summary
	if math.Abs(s[schema.TTFT.Key(schema.Mean)]-ttft) > 1e-6 || math.Abs(s[schema.E2E.Key(schema.Mean)]-e2e) > 1e-6 || math.Abs(s[schema.TPOT.Key(schema.Mean)]-decode(301)) > 1e-6 {
		t.Fatalf("ttft %.9f e2e %.9f tpot %.9f, want %.9f %.9f %.9f", s[schema.TTFT.Key(schema.Mean)], s[schema.E2E.Key(schema.Mean)], s[schema.TPOT.Key(schema.Mean)], ttft, e2e, decode(301))
	}
}

// Per-engine counters reach the report: SGLang cache hits, accept length.
func TestEngineCountersInReport(t *testing.T) {
	run := func(cfg string) *struct{ hit, accept float64 } {
		rep, err := Predict(Inputs{Config: []byte(cfg), Trace: testTrace(t), TraceName: "c.jsonl", Sets: []string{"traffic.stop.requests=60"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &struct{ hit, accept float64 }{rep.Engine.CacheHitRatio, rep.Engine.MeanAcceptLength}
	}
	v := run("engine: {backend: vllm}")
	s := run("engine: {backend: sglang}")
	m := run("engine: {backend: vllm, speculation: {kind: mtp, num_speculative_tokens: 2, acceptance_rates: [1, 1]}}")
	if v.accept != 1 || v.hit != 0 || s.hit <= 0 || m.accept <= 2 {
		t.Fatalf("vllm %+v sglang %+v mtp %+v", *v, *s, *m)
	}
}

// A pool so small that a lone running request must preempt itself to grow:
// the replay still finishes (every request completes or is rejected) instead
// of stalling on a pass that only preempted.
func TestTinyPoolSelfPreemption(t *testing.T) {
	for _, g := range []string{"native", "kvbm"} {
		cfg := "engine: {workers: {aggregated: {parallelism: {replicas: 2}, kv_cache: {g1_backend: " + g + ", capacity: {blocks: 600}}}}}"
		rep, err := Predict(Inputs{Config: []byte(cfg), Trace: testTrace(t), TraceName: "c.jsonl", CapturePerRequest: true}, nil)
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		for _, r := range rep.Requests() {
			if r.TerminalStatus == "unfinished" {
				t.Fatalf("%s: request %d unfinished", g, r.UUID)
			}
		}
		if rep.Summary[schema.NumPreemptions] == 0 {
			t.Fatalf("%s: expected preemptions in a 600-block pool", g)
		}
	}
}

// The console table (`dynosim predict --format table`) of the golden run:
// AIPerf's rows and columns from metrics.Build (the page shows the same),
// integers as integers.
func TestGoldenTable(t *testing.T) {
	rep, err := Predict(Inputs{Config: []byte(golden4), Trace: testTrace(t), TraceName: "conversation_400.jsonl"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "golden_table_conversation_400_4w.txt", []byte(rep.Table()))
}
