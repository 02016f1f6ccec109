package replay

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/timing"
)

// ns is a breakdown part (ms, from integer nanoseconds) back in ns.
func ns(ms float64) int64 { return int64(math.Round(ms * 1e6)) }

// checkBreakdowns: every request with a first token has parts ≥ 0 that add
// up to its TTFT to the nanosecond; the others have none.
func checkBreakdowns(t *testing.T, name string, recs []report.RequestRecord) {
	t.Helper()
	for _, r := range recs {
		if r.TTFTMs == nil {
			if r.TTFTBreakdownMs != nil {
				t.Fatalf("%s: request %d has a breakdown but no first token", name, r.UUID)
			}
			continue
		}
		if r.TTFTBreakdownMs == nil {
			t.Fatalf("%s: request %d has a TTFT but no breakdown", name, r.UUID)
		}
		var sum int64
		for _, p := range r.TTFTBreakdownMs.Values() {
			if p < 0 {
				t.Fatalf("%s: request %d: negative part in %+v", name, r.UUID, *r.TTFTBreakdownMs)
			}
			sum += ns(p)
		}
		if sum != ns(*r.TTFTMs) {
			t.Fatalf("%s: request %d: parts %+v sum to %d ns, TTFT is %d ns", name, r.UUID, *r.TTFTBreakdownMs, sum, ns(*r.TTFTMs))
		}
	}
}

// A queued request, by hand: one sequence at a time, a 4-token budget, 10 ms
// prefill and 1 ms decode per pass, a 2 ms frontend. Both 8-token prompts
// arrive at 0 and reach the router at 2. Request 1 prefills in two chunks,
// 2–12 and 12–23 (the pass that samples its first token also pays a decode
// step), and decodes 23–24. Request 2 waits for the sequence slot until 24,
// then prefills 24–34 and 34–45.
func TestTTFTBreakdownQueuedRequest(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 64, MaxBatchedTokens: 4, MaxSeqs: 1, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 1}}
	wl := trace(t, row(0, 8, 2, 1, 2)+"\n"+row(0, 8, 2, 3, 4), 4)
	rep, err := Run(wl, agg(workers(t, 1, cfg)), Options{Capture: true, Frontend: timing.FromMs(2)})
	if err != nil {
		t.Fatal(err)
	}
	recs := rep.Requests()
	checkBreakdowns(t, "queued", recs)
	want := []report.Breakdown{
		{Frontend: 2, EngineQueue: 0, Prefill: 10, FirstTokenPass: 11},
		{Frontend: 2, EngineQueue: 22, Prefill: 10, FirstTokenPass: 11},
	}
	for i, w := range want {
		if got := *recs[i].TTFTBreakdownMs; got != w {
			t.Errorf("request %d: breakdown %+v, want %+v", i+1, got, w)
		}
	}
	// The section: means over both requests, in order, adding up.
	s := rep.TTFTBreakdown
	if s == nil || s.Requests != 2 || s.MeanTTFTMs != 34 || len(s.Parts) != 6 {
		t.Fatalf("section %+v", s)
	}
	var names []string
	sum := 0.0
	for _, p := range s.Parts {
		names = append(names, p.Part)
		sum += p.MeanMs
	}
	if !slices.Equal(names, []string{"frontend", "router_queue", "engine_queue", "preemption", "prefill", "first_token_pass"}) || sum != 34 || s.Parts[2].MeanMs != 11 || s.Parts[2].P99Ms != 22 {
		t.Errorf("parts %+v", s.Parts)
	}
}

// A request preempted before its first token, by hand (4 blocks of 4
// tokens, a 2-token budget, 10 ms prefill, 1 ms decode). Request 1 (4
// tokens in, 9 out) prefills 0–10 and 10–21 and holds the budget; request 2
// (8 in) arrives at 1, is admitted at 21 and prefills a token per pass
// beside request 1's decodes (11 ms passes) until request 1 needs a third
// block at 65 and preempts it, the newest. Re-admitted when request 1
// finishes at 69, it recomputes in 2-token chunks, 69–99, and its first
// token's pass is 99–110: TTFT 109 = 20 queued + 48 lost + 30 + 11.
func TestTTFTBreakdownPreemptedRequest(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 4, MaxBatchedTokens: 2, MaxSeqs: 4, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 1}, Watch: 2}
	wl := trace(t, row(0, 4, 9, 1)+"\n"+row(1, 8, 2, 2, 3), 4)
	rep, err := Run(wl, agg(workers(t, 1, cfg)), Options{Capture: true, Watch: 2})
	if err != nil {
		t.Fatal(err)
	}
	recs := rep.Requests()
	checkBreakdowns(t, "preempted", recs)
	if got, want := *recs[1].TTFTBreakdownMs, (report.Breakdown{EngineQueue: 20, Preemption: 48, Prefill: 30, FirstTokenPass: 11}); got != want {
		t.Errorf("preempted request: breakdown %+v, want %+v", got, want)
	}
	// Its life: the same boundaries, pass by pass.
	var life []string
	for _, e := range rep.Timeline.Events {
		s := fmt.Sprintf("%g %s", e.TMs, e.Event)
		if e.Event == "pass" {
			s += fmt.Sprintf("→%g p%d d%d t%d b%d", *e.EndMs, e.PrefillTokens, e.DecodeTokens, e.Tokens, e.BatchRequests)
		}
		life = append(life, s)
	}
	want := []string{"1 arrival", "1 routed", "21 admitted",
		"21 pass→32 p1 d0 t0 b2", "32 pass→43 p1 d0 t0 b2", "43 pass→54 p1 d0 t0 b2", "54 pass→65 p1 d0 t0 b2",
		"65 preempted", "69 admitted",
		"69 pass→79 p2 d0 t0 b1", "79 pass→89 p2 d0 t0 b1", "89 pass→99 p2 d0 t0 b1", "99 pass→110 p2 d0 t1 b1",
		"110 first_token", "110 pass→111 p0 d1 t1 b1", "111 completed"}
	if !slices.Equal(life, want) {
		t.Errorf("timeline\n got %q\nwant %q", life, want)
	}
	if rep.Timeline.UUID != 2 || rep.Timeline.Events[1].Pool != "aggregated" {
		t.Errorf("timeline %+v", rep.Timeline)
	}
}

// Disaggregated parts: the handoff's 128 ms is the kv_transfer part, and
// the parts add up on both engines and both paths.
func TestTTFTBreakdownDisaggregated(t *testing.T) {
	for _, p := range backends {
		for _, direct := range []bool{false, true} {
			name := fmt.Sprintf("%v direct=%v", p, direct)
			c := pd{policy: p, prefill: 1, decode: 1, pBlocks: 256, dBlocks: 256, direct: direct, fullPrompt: true, delay: true}
			recs := c.run(t, row(0, 128, 4, blocks(1, 32)...)+"\n"+row(5, 64, 4, blocks(100, 16)...)).Requests()
			checkBreakdowns(t, name, recs)
			for _, r := range recs {
				b := r.TTFTBreakdownMs
				if b.KVTransfer == nil || *b.KVTransfer != *r.KVTransferMs || b.Prefill <= 0 || b.FirstTokenPass <= 0 {
					t.Errorf("%s: request %d: breakdown %+v with a %v ms transfer", name, r.UUID, *b, *r.KVTransferMs)
				}
			}
		}
	}
}

// Watching a request must not change the run: only request_timeline is
// added; a request that does not exist is an error.
func TestWatchOnlyObserves(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 8, MaxBatchedTokens: 4, MaxSeqs: 4, ChunkedPrefill: true, PrefixCaching: true, Model: timing.Fixed{Prefill: 10, Decode: 1}}
	text := row(0, 8, 5, 1, 2) + "\n" + row(1, 12, 3, 1, 2, 3) + "\n" + row(2, 8, 6, 4, 5)
	run := func(watch uint64) (*report.Report, error) {
		c := cfg
		c.Watch = watch
		return Run(trace(t, text, 4), agg(workers(t, 2, c)), Options{Capture: true, Watch: watch})
	}
	plain, err := run(0)
	if err != nil || plain.Timeline != nil {
		t.Fatalf("plain run: %v, timeline %+v", err, plain.Timeline)
	}
	for id := uint64(1); id <= 3; id++ {
		w, err := run(id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Timeline == nil || w.Timeline.UUID != id || w.Timeline.Events[0].Event != "arrival" || w.Timeline.Events[len(w.Timeline.Events)-1].Event != "completed" {
			t.Fatalf("watch %d: timeline %+v", id, w.Timeline)
		}
		w.Timeline = nil
		if a, b := string(w.RequestsJSONL()), string(plain.RequestsJSONL()); a != b || fmt.Sprint(w.Summary) != fmt.Sprint(plain.Summary) {
			t.Fatalf("watch %d changed the run", id)
		}
	}
	if _, err := run(4); err == nil || err.Error() != "timeline: request 4 does not exist: the run has 3 requests (uuid 1 to 3)" {
		t.Fatalf("watch 4: %v", err)
	}
}

// On every core a watched request's passes account for its work: the
// prefill chunks add up to its prompt, each token is emitted once, and the
// pass that emits the first one ends at first_token.
func TestTimelineAccountsForTheWork(t *testing.T) {
	for _, p := range []engine.Policy{engine.VLLM, engine.TRTLLM, engine.SGLang} {
		sg := engine.DefaultSGLang()
		sg.ChunkedPrefillSize = 8
		cfg := engine.Config{Policy: p, BlockSize: 4, NumBlocks: 64, MaxBatchedTokens: 8, MaxSeqs: 4, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 1}, SGLang: sg, Watch: 2}
		text := row(0, 12, 4, 1, 2, 3) + "\n" + row(0, 20, 5, 4, 5, 6, 7, 8)
		rep, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{Capture: true, Watch: 2})
		if err != nil {
			t.Fatal(err)
		}
		prefill, tokens, firstEnd, first := 0, 0, -1.0, -1.0
		for _, e := range rep.Timeline.Events {
			switch e.Event {
			case "pass":
				prefill += e.PrefillTokens
				if tokens == 0 && e.Tokens > 0 {
					firstEnd = *e.EndMs
				}
				tokens += e.Tokens
			case "first_token":
				first = e.TMs
			}
		}
		if prefill != 20 || tokens != 5 || first != firstEnd || first != *rep.Requests()[1].FirstTokenMs {
			t.Errorf("%v: %d prefill tokens, %d emitted, first token at %v (pass end %v): %+v", p, prefill, tokens, first, firstEnd, rep.Timeline.Events)
		}
	}
}
