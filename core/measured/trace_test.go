package measured

import (
	"bytes"
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
		trace, err := r.Trace()
		if err != nil {
			return
		}
		if _, err := workload.ReadMooncake("t.jsonl", trace, TraceBlock); err != nil {
			t.Fatalf("the trace does not replay: %v\n%s", err, trace)
		}
	})
}
