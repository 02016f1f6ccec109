package replay

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

func workers(t *testing.T, n int, cfg engine.Config) []*engine.Worker {
	t.Helper()
	var ws []*engine.Worker
	for range n {
		w, err := engine.NewWorker(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return ws
}

func trace(t *testing.T, text string, block int) *workload.Workload {
	t.Helper()
	w, err := workload.ReadMooncake("t.jsonl", []byte(text), block)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// agg is one aggregated pool of ws behind round robin, one GPU each.
func agg(ws []*engine.Worker) []Pool {
	return []Pool{{Name: "aggregated", Workers: ws, Router: router.NewRoundRobin(), GPUs: 1}}
}

// H4: two round-robin workers, staggered arrivals.
func TestH4TwoWorkers(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 32, MaxBatchedTokens: 8, MaxSeqs: 2, ChunkedPrefill: true, Model: timing.Polynomial{}}
	wl := trace(t, `{"timestamp":100,"input_length":8,"output_length":4,"hash_ids":[1,2]}
{"timestamp":100,"input_length":16,"output_length":2,"hash_ids":[3,4,5,6]}
{"timestamp":101,"input_length":8,"output_length":2,"hash_ids":[7,8]}
{"timestamp":101,"input_length":8,"output_length":2,"hash_ids":[9,10]}`, 4)
	rep, err := Run(wl, agg(workers(t, 2, cfg)), Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s["completed_requests"] != 4 || s["total_input_tokens"] != 40 || s["total_output_tokens"] != 10 {
		t.Fatalf("summary %v", s)
	}
	recs := captured(t, rep)
	arr := []float64{recs[0].ArrivalTimeMs, recs[1].ArrivalTimeMs, recs[2].ArrivalTimeMs, recs[3].ArrivalTimeMs}
	if !slices.Equal(arr, []float64{0, 0, 1, 1}) {
		t.Fatalf("arrivals %v", arr)
	}
	if *recs[2].FirstAdmitMs < *recs[0].FirstTokenMs || *recs[3].FirstAdmitMs < *recs[1].FirstTokenMs || *recs[2].FirstAdmitMs > *recs[3].FirstAdmitMs {
		t.Fatalf("admissions %+v", recs)
	}
}

func captured(t *testing.T, rep *report.Report) []report.RequestRecord {
	t.Helper()
	return rep.Requests()
}

// H7: TRT-LLM single worker, concurrency 1, an oversized request rejected.
func TestH7TRTLLMRejects(t *testing.T) {
	cfg := engine.Config{Policy: engine.TRTLLM, BlockSize: 4, NumBlocks: 4, MaxBatchedTokens: 64, MaxSeqs: 4,
		ChunkedPrefill: true, PrefixCaching: true, Model: timing.Polynomial{}, Scale: timing.Scale{Speedup: 1000, DecodeSpeedup: 1}}
	wl := trace(t, `{"timestamp":0,"input_length":20,"output_length":8,"hash_ids":[1,2,3,4,5]}
{"timestamp":0,"input_length":4,"output_length":4,"hash_ids":[1]}`, 4)
	rep, err := Run(wl, agg(workers(t, 1, cfg)), Options{Load: Load{Kind: Concurrency, Concurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s["num_requests"] != 2 || s["completed_requests"] != 1 || s["total_output_tokens"] != 4 {
		t.Fatalf("summary %v", s)
	}
}

// H8: the soft virtual-time cap.
func TestH8MaxTime(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 32, MaxBatchedTokens: 8, MaxSeqs: 2, ChunkedPrefill: true,
		Model: timing.Polynomial{}, Scale: timing.Scale{Speedup: 1000, DecodeSpeedup: 1}}
	text := ""
	for i := range 5 {
		text += fmt.Sprintf(`{"timestamp":%d,"input_length":8,"output_length":2,"hash_ids":[1,2]}`+"\n", 1000*i)
	}
	capped, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{MaxTime: timing.FromMs(2500)})
	if err != nil {
		t.Fatal(err)
	}
	if s := capped.Summary; s["num_requests"] >= 5 || s["duration_ms"] > 2500 {
		t.Fatalf("capped %v requests, %v ms", s["num_requests"], s["duration_ms"])
	}
	full, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := full.Summary; s["completed_requests"] != 5 || s["duration_ms"] < 4000 {
		t.Fatalf("full %v requests, %v ms", s["completed_requests"], s["duration_ms"])
	}
}

// Sessions: the next turn arrives Delay after the previous one completes,
// in both trace and concurrency modes (L9's depth-first order).
func TestSessionsAndConcurrency(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 64, MaxBatchedTokens: 64, MaxSeqs: 4, ChunkedPrefill: true, PrefixCaching: true, Model: timing.Polynomial{}}
	text := `{"session_id":"a","timestamp":0,"input_length":64,"output_length":2,"hash_ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}
{"session_id":"a","delay":10,"input_length":8,"output_length":2,"hash_ids":[1,2]}
{"session_id":"b","timestamp":0,"input_length":12,"output_length":2,"hash_ids":[20,21,22]}`
	for _, load := range []Load{{Kind: TraceTimestamps}, {Kind: Concurrency, Concurrency: 1}} {
		rep, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{Load: load, Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		recs := rep.Requests()
		if len(recs) != 3 || rep.Summary["completed_requests"] != 3 {
			t.Fatalf("load %v: %d records", load, len(recs))
		}
		var a0, a1, b *report.RequestRecord
		for i := range recs {
			switch {
			case recs[i].InputLength == 64:
				a0 = &recs[i]
			case recs[i].InputLength == 8:
				a1 = &recs[i]
			default:
				b = &recs[i]
			}
		}
		if a1.ArrivalTimeMs < (*a0.LastTokenMs)+10-1e-9 {
			t.Fatalf("load %v: turn 2 arrived at %v, turn 1 ended %v", load, a1.ArrivalTimeMs, (*a0.LastTokenMs))
		}
		if load.Kind == Concurrency && b.ArrivalTimeMs < (*a1.LastTokenMs) {
			t.Fatalf("concurrency 1: b arrived %v before a finished %v", b.ArrivalTimeMs, (*a1.LastTokenMs))
		}
	}
}

func TestPoissonAndConstantArrivals(t *testing.T) {
	wl, err := workload.Synthetic(200, 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 8192, MaxSeqs: 256, ChunkedPrefill: true, Model: timing.Polynomial{}}
	rep, err := Run(wl, agg(workers(t, 4, cfg)), Options{Load: Load{Kind: ConstantRate, RatePerSec: 10}, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	recs := rep.Requests()
	for i := range 4 {
		if recs[i].ArrivalTimeMs != float64(100*i) {
			t.Fatalf("constant arrivals %v", []float64{recs[0].ArrivalTimeMs, recs[1].ArrivalTimeMs, recs[2].ArrivalTimeMs})
		}
	}
	wl, _ = workload.Synthetic(2000, 16, 1)
	rep, err = Run(wl, agg(workers(t, 4, cfg)), Options{Load: Load{Kind: Poisson, RatePerSec: 10}, Capture: true, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	recs = rep.Requests()
	mean := recs[len(recs)-1].ArrivalTimeMs / float64(len(recs)-1)
	var ss float64
	for i := 1; i < len(recs); i++ {
		g := recs[i].ArrivalTimeMs - recs[i-1].ArrivalTimeMs - mean
		ss += g * g
	}
	std := math.Sqrt(ss / float64(len(recs)-1))
	if mean < 95 || mean > 105 || std < 90 || std > 110 {
		t.Fatalf("poisson gaps: mean %v std %v ms, want ≈100 and ≈100", mean, std)
	}
}

// A pass limit turns an oversized run into an error, not a hang.
func TestMaxPasses(t *testing.T) {
	wl, _ := workload.Synthetic(50, 16, 100)
	cfg := engine.Config{BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 8192, MaxSeqs: 256, ChunkedPrefill: true, Model: timing.Polynomial{}}
	_, err := Run(wl, agg(workers(t, 1, cfg)), Options{Load: Load{Kind: Concurrency, Concurrency: 1}, MaxPasses: 10})
	if err == nil {
		t.Fatal("no error past the pass limit")
	}
}

// Load modes that ignore timestamps release sessions in file order; trace
// timestamps release them by time.
func TestConcurrencyDispatchesInFileOrder(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 64, ChunkedPrefill: true, Model: timing.Polynomial{}}
	text := `{"timestamp":300,"input_length":12,"output_length":1,"hash_ids":[1,2,3]}
{"timestamp":100,"input_length":4,"output_length":1,"hash_ids":[4]}
{"timestamp":200,"input_length":8,"output_length":1,"hash_ids":[5,6]}`
	for _, c := range []struct {
		load Load
		want []int
	}{
		{Load{Kind: Concurrency, Concurrency: 1}, []int{12, 4, 8}},
		{Load{Kind: TraceTimestamps}, []int{4, 8, 12}},
	} {
		rep, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{Load: c.load, Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range rep.Requests() {
			got = append(got, r.InputLength)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("load %v: released inputs %v, want %v", c.load.Kind, got, c.want)
		}
	}
}

// A ramp starts the closed loop's clients evenly over its span; later
// sessions start when a slot frees, as without one.
func TestConcurrencyRampUp(t *testing.T) {
	wl, err := workload.Synthetic(12, 16, 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 8192, MaxSeqs: 256, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 5}}
	rep, err := Run(wl, agg(workers(t, 1, cfg)), Options{Load: Load{Kind: Concurrency, Concurrency: 4, RampUp: timing.FromMs(200)}, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	recs := rep.Requests()
	at := map[float64]bool{}
	for _, r := range recs {
		at[r.ArrivalTimeMs] = true
	}
	for _, ms := range []float64{0, 50, 100, 150} {
		if !at[ms] {
			t.Fatalf("no client joined at %v ms: arrivals %v", ms, at)
		}
	}
	// The first client's next request starts when its first ends (closed
	// loop), before the ramp is over.
	if got, want := recs[1].ArrivalTimeMs, *recs[0].TerminalTimeMs; got != want || want >= 50 {
		t.Fatalf("second release at %v, want the first's end %v (< 50)", got, want)
	}
}

// Async scheduling: a request that reaches a busy worker joins the pass
// after next (the next one was planned while the current one ran); one
// that reaches an idle worker starts at once.
func TestAsyncSchedulingJoinsThePassAfterNext(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 8192, MaxSeqs: 256, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 10}}
	text := `{"timestamp":0,"input_length":8,"output_length":6,"hash_ids":[1,2]}
{"timestamp":15,"input_length":8,"output_length":2,"hash_ids":[3,4]}`
	first := map[bool]float64{}
	for _, async := range []bool{false, true} {
		rep, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{Load: Load{Kind: TraceTimestamps}, Capture: true, AsyncScheduling: async})
		if err != nil {
			t.Fatal(err)
		}
		recs := rep.Requests()
		if got := *recs[0].FirstTokenMs; got != 20 {
			t.Fatalf("async %v: the first request reached an idle worker: first token at %v, want 20", async, got)
		}
		first[async] = *recs[1].FirstTokenMs
	}
	// Passes (prefill 10 + decode 10 when both run): [0,20) the first's
	// prefill and first token; the second arrives at 15. Sync: [20,40)
	// holds its prefill. Async: [20,30) was planned without it (decode
	// only), so its prefill runs in [30,50).
	if first[false] != 40 || first[true] != 50 {
		t.Fatalf("second request's first token at %v (sync) and %v (async), want 40 and 50", first[false], first[true])
	}
}

// The serving frontend's latency delays a request's arrival at the router:
// TTFT and E2E include it, the router's queue time does not.
func TestFrontendLatency(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 8192, MaxSeqs: 256, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 10}}
	text := `{"timestamp":0,"input_length":8,"output_length":3,"hash_ids":[1,2]}`
	var ttft [2]float64
	for i, d := range []timing.Time{0, timing.FromMs(7.5)} {
		rep, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{Load: Load{Kind: TraceTimestamps}, Capture: true, Frontend: d})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Requests()[0]
		ttft[i] = *r.TTFTMs
		if *r.RouterQueueMs != 0 {
			t.Errorf("frontend %v: router queue %v ms, want 0", d, *r.RouterQueueMs)
		}
	}
	if ttft[1]-ttft[0] != 7.5 {
		t.Fatalf("ttft %v without and %v with a 7.5 ms frontend", ttft[0], ttft[1])
	}
}

// A request deferred by async scheduling is not stranded when the pass
// after it finds nothing else to do.
func TestAsyncSchedulingDoesNotStrandADeferredRequest(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 8192, MaxSeqs: 256, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 10}}
	text := `{"timestamp":0,"input_length":8,"output_length":1,"hash_ids":[1,2]}
{"timestamp":5,"input_length":8,"output_length":1,"hash_ids":[3,4]}`
	rep, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{Load: Load{Kind: TraceTimestamps}, Capture: true, AsyncScheduling: true})
	if err != nil {
		t.Fatal(err)
	}
	recs := rep.Requests()
	if recs[1].FirstTokenMs == nil || *recs[1].FirstTokenMs > 60 {
		t.Fatalf("the deferred request's first token at %v, want it served right after the first", recs[1].FirstTokenMs)
	}
}
