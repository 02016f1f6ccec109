package measured

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

// The trace is what the simulator's Mooncake reader accepts, with the
// measured lengths and arrival times and no shared prefix block.
func TestTraceReplays(t *testing.T) {
	for _, fs := range [][]File{load(t, aiperfRecords), load(t, aiperfSummary, aiperfRecords), load(t, vllmDetailed), {{"new.jsonl", []byte(newRecords)}}} {
		r := mustParse(t, fs...)
		t.Run(r.Files[0], func(t *testing.T) {
			trace, err := r.Trace()
			if err != nil {
				t.Fatal(err)
			}
			w, err := workload.ReadMooncake("trace.jsonl", trace, TraceBlock)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Sessions) != len(r.Requests) {
				t.Fatalf("%d sessions, %d requests", len(w.Sessions), len(r.Requests))
			}
			seen := map[uint32]bool{}
			for i, s := range w.Sessions {
				q := r.Requests[i]
				turn := s.Turns[0]
				if len(s.Turns) != 1 || turn.Input != q.InputTokens || turn.Output != q.OutputTokens {
					t.Fatalf("request %d: %d turns, %d in / %d out, want %d / %d", i, len(s.Turns), turn.Input, turn.Output, q.InputTokens, q.OutputTokens)
				}
				if s.Start != timing.FromMs(q.StartMs) {
					t.Fatalf("request %d starts at %v, want %v ms", i, s.Start, q.StartMs)
				}
				for _, b := range turn.Blocks {
					if seen[b] {
						t.Fatalf("request %d shares block %d", i, b)
					}
					seen[b] = true
				}
			}
		})
	}
}

func TestTraceFormat(t *testing.T) {
	r := &Run{Requests: []Request{{StartMs: 0, InputTokens: 512, OutputTokens: 3}, {StartMs: 1.5000004, InputTokens: 513, OutputTokens: 1}, {StartMs: 2, InputTokens: 0, OutputTokens: 2}}}
	got, err := r.Trace()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":0,"input_length":512,"output_length":3,"hash_ids":[0]}
{"timestamp":1.5,"input_length":513,"output_length":1,"hash_ids":[1,2]}
{"timestamp":2,"input_length":0,"output_length":2,"hash_ids":[]}
`
	if string(got) != want {
		t.Fatalf("trace\n%s\nwant\n%s", got, want)
	}
}

func TestTraceNeedsRecords(t *testing.T) {
	_, err := mustParse(t, load(t, aiperfSummary)...).Trace()
	if err == nil || !strings.Contains(err.Error(), "profile_export.jsonl") {
		t.Fatalf("error %v", err)
	}
}

// FuzzParse: no input panics Parse or what follows it, and a trace it
// writes is one the simulator reads.
func FuzzParse(f *testing.F) {
	for _, p := range []string{aiperfSummary, vllmDetailed, vllmSummary, vllmReal} {
		f.Add(load(f, p)[0].Data)
	}
	lines := bytes.SplitAfter(load(f, aiperfRecords)[0].Data, []byte("\n"))
	f.Add(bytes.Join(lines[8:14], nil)) // errors and successes, ~25 KB
	f.Add([]byte(newSummary))
	f.Add([]byte(newRecords))
	f.Add([]byte(`{"completed": 1, "duration": NaN, "input_lens": [3], "output_lens": [2], "ttfts": [null], "itls": [[0.1, null]], "request_rate": 2}`))
	pred := []byte(`{"summary": {"mean_ttft_ms": 1, "p99_itl_ms": 2, "request_throughput_rps": 3, "mean_input_sequence_length": 4}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(File{"f", data})
		if err != nil {
			if r != nil {
				t.Fatal("a run and an error")
			}
			return
		}
		_, _ = Compare(r, pred)
		for _, m := range []schema.Family{schema.TTFT, schema.ITL, schema.E2E} {
			qs, vs := r.CDF(m)
			if len(qs) != len(vs) {
				t.Fatalf("%s: %d quantiles, %d values", m, len(qs), len(vs))
			}
		}
		rows, err := r.traceRows()
		if err != nil {
			return
		}
		if size, err := rows.size(r); err != nil || size > 64<<20 {
			return // bounded (Trace refuses past workload.MaxTraceBytes), but no fuzz input need be 1 GiB
		}
		trace, err := r.Trace()
		if err != nil {
			t.Fatalf("the trace's size was checked, yet: %v", err)
		}
		if _, err := workload.ReadMooncake("t.jsonl", trace, TraceBlock); err != nil {
			t.Fatalf("the trace does not replay: %v\n%s", err, trace)
		}
	})
}

// summary is a summary-only vLLM result of n requests with those token
// totals, at 4 requests/s.
func summary(t *testing.T, n, in, out float64) *Run {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"completed": n, "total_input_tokens": in, "total_output_tokens": out, "request_rate": 4, "duration": 1})
	return mustParse(t, File{"result.json", b})
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// Issue 29 item 14: a 1.4 KB summary claiming 4 Mi requests of 16 Mi
// prompt tokens made convert-trace build a ~1 TB trace in memory. The
// trace is bounded like a trace read (workload.MaxTraceBytes, the
// largest trace dynosim reads; workload.MaxRequestTokens a request),
// checked before a byte is written, and the error names the summary's
// fields and the limit.
func TestItem14ConvertTraceHugeCountBounded(t *testing.T) {
	limit := strconv.Itoa(workload.MaxTraceBytes)
	for _, tc := range []struct {
		name       string
		n, in, out float64
		want       []string
	}{
		{"4 Mi requests of 16 Mi tokens", 1 << 22, (1 << 22) * float64(workload.MaxRequestTokens), 1 << 22,
			[]string{"result.json: completed (4194304 requests) × total_input_tokens / completed (16777216 prompt tokens, 32768 hash ids a request): the trace passes " + limit + " bytes (workload.MaxTraceBytes", "at request 3616"}},
		{"1e15 requests", 1e15, 1e15, 1e15, []string{"result.json: completed: 1000000000000000 requests make a trace of more than " + limit + " bytes (workload.MaxTraceBytes"}},
		{"1 Mi requests of 100 K tokens", 1 << 20, (1 << 20) * 100000, 1 << 20, []string{"result.json: completed (1048576 requests) × total_input_tokens / completed (100000 prompt tokens, 196 hash ids a request): the trace passes " + limit + " bytes"}},
		{"17 Mi requests of 1 token", 17 << 20, 17 << 20, 17 << 20, []string{"result.json: completed: 17825792 requests make a trace of more than " + limit + " bytes"}},
		{"prompts past MaxRequestTokens", 2, 2 * (float64(workload.MaxRequestTokens) + 1), 2, []string{"result.json: total_input_tokens / completed: 16777217 tokens a request, more than 16777216 (workload.MaxRequestTokens"}},
		{"outputs past MaxRequestTokens", 2, 2, 1e300, []string{"total_output_tokens / completed: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := summary(t, tc.n, tc.in, tc.out)
			var w countingWriter
			n, err := r.WriteTrace(&w)
			if err == nil || n != 0 || w.n != 0 {
				t.Fatalf("wrote %d requests, %d bytes, error %v; want a refusal before any byte", n, w.n, err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("error %q does not say %q", err, s)
				}
			}
			if _, err2 := r.Trace(); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("Trace: %v; WriteTrace: %v", err2, err)
			}
		})
	}
	// A per-request run is bounded the same way: 40,000 records of 16 Mi
	// prompt tokens are 1.3 billion hash ids.
	big := &Run{Files: []string{"p.jsonl"}, Requests: make([]Request, 40000)}
	for i := range big.Requests {
		big.Requests[i].InputTokens = workload.MaxRequestTokens
	}
	if _, err := big.WriteTrace(&countingWriter{}); err == nil || !strings.Contains(err.Error(), "p.jsonl: the trace of its 40000 requests passes "+limit+" bytes (workload.MaxTraceBytes") {
		t.Fatalf("records: %v", err)
	}
}

// Issue 29 item 14: the size checked before writing is the trace's size
// (hash ids crossing digit counts included), and WriteTrace streams the
// bytes Trace returns.
func TestItem14TraceSizeIsExact(t *testing.T) {
	for _, r := range []*Run{
		summary(t, 3000, 3000*5000, 3000*7), // ids 0 to 29999: 1 to 5 digits
		summary(t, 1, 0, 1),
		mustParse(t, load(t, vllmDetailed)...),
		mustParse(t, load(t, vllmReal)...),
		{Requests: []Request{{StartMs: 1.5000004, InputTokens: 513, OutputTokens: 1}, {InputTokens: 0, OutputTokens: 2}}},
	} {
		tr, err := r.Trace()
		if err != nil {
			t.Fatal(err)
		}
		size, err := r.TraceSize()
		if err != nil || size != int64(len(tr)) {
			t.Fatalf("%v: size %d (%v), trace %d bytes", r.Files, size, err, len(tr))
		}
		var b bytes.Buffer
		n, err := r.WriteTrace(&b)
		if err != nil || !bytes.Equal(b.Bytes(), tr) || n != bytes.Count(tr, []byte("\n")) {
			t.Fatalf("%v: WriteTrace wrote %d requests (%v), bytes equal %v", r.Files, n, err, bytes.Equal(b.Bytes(), tr))
		}
		if _, err := workload.ReadMooncake("t.jsonl", tr, TraceBlock); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ from, k uint64 }{{0, 0}, {0, 1}, {0, 10}, {0, 11}, {9, 2}, {95, 10}, {999999, 3}, {1 << 40, 5}} {
		want := 0
		for i := tc.from; i < tc.from+tc.k; i++ {
			if i > tc.from {
				want++
			}
			want += len(strconv.FormatUint(i, 10))
		}
		if got := idsLen(tc.from, tc.k); got != int64(want) {
			t.Errorf("idsLen(%d, %d) = %d, want %d", tc.from, tc.k, got, want)
		}
	}
}
