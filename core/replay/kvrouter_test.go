package replay

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// kvPool is two workers behind the KV router, publishing KV events.
func kvPool(t *testing.T, seed uint64) []Pool {
	t.Helper()
	cfg := engine.Config{BlockSize: 4, NumBlocks: 64, ChunkedPrefill: true, PrefixCaching: true, Events: true, Model: timing.Polynomial{}}
	kv, err := router.NewKV(router.KVConfig{Cost: router.DefaultCostConfig(), BlockSize: 4, Seed: seed, UseEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	return []Pool{{Name: "aggregated", Workers: workers(t, 2, cfg), Router: kv, GPUs: 1}}
}

// The boundary rule (spec §8.5): KV events become visible at the end of the
// pass that stored them. A request arriving exactly at that pass end sees
// the blocks (completions apply before arrivals within a timestamp) and
// goes to the worker that holds its prefix; one arriving a nanosecond
// earlier does not see them and is placed by load alone.
func TestKVRouterSeesBlocksFromThePassEnd(t *testing.T) {
	first := `{"timestamp":0,"input_length":32,"output_length":8,"hash_ids":[1,2,3,4,5,6,7,8]}`
	// When does request 1's prefill pass end? Its first token.
	rep, err := Run(trace(t, first, 4), kvPool(t, 1), Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	end := timing.FromMs(*rep.Requests()[0].FirstTokenMs)
	place := func(at timing.Time, seed uint64) (w0, w1 int) {
		text := first + "\n" + fmt.Sprintf(`{"timestamp":%s,"input_length":32,"output_length":8,"hash_ids":[1,2,3,4,5,6,7,8]}`, at.String()[:len(at.String())-2])
		rep, err := Run(trace(t, text, 4), kvPool(t, seed), Options{Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Requests()
		return *r[0].Worker, *r[1].Worker
	}
	for seed := range uint64(8) {
		if a, b := place(end, seed); a != b {
			t.Fatalf("seed %d: arriving at the pass end (%v), request 2 went to worker %d, its prefix is on %d", seed, end, b, a)
		}
	}
	other := 0
	for seed := range uint64(16) {
		if a, b := place(end-1, seed); a != b {
			other++
		}
	}
	if other == 0 {
		t.Fatal("arriving 1 ns before the pass end, request 2 still always followed the prefix it cannot see yet")
	}
}

// The router queue (spec §8.6, §10.11): above the threshold every worker is
// busy and requests wait in the router, the wait counting in their TTFT and
// shown in their record; when a prefill completes, fcfs places the oldest
// and wspt the one with the fewest uncached prompt tokens.
func TestKVRouterQueue(t *testing.T) {
	text := `{"timestamp":0,"input_length":32,"output_length":2,"hash_ids":[1,2,3,4,5,6,7,8]}
{"timestamp":0,"input_length":24,"output_length":2,"hash_ids":[11,12,13,14,15,16]}
{"timestamp":0,"input_length":8,"output_length":2,"hash_ids":[21,22]}`
	order := func(policy string) []uint64 {
		cfg := engine.Config{BlockSize: 4, NumBlocks: 64, MaxBatchedTokens: 64, ChunkedPrefill: true, PrefixCaching: true, Events: true, Model: timing.Polynomial{}}
		kv, err := router.NewKV(router.KVConfig{Cost: router.DefaultCostConfig(), BlockSize: 4, Seed: 1, UseEvents: true,
			Threshold: 0.1, MaxBatchedTokens: 64, QueuePolicy: policy})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(trace(t, text, 4), []Pool{{Name: "aggregated", Workers: workers(t, 1, cfg), Router: kv, GPUs: 1}}, Options{Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		recs := rep.Requests()
		if *recs[0].RouterQueueMs != 0 || !(*recs[1].RouterQueueMs > 0 && *recs[2].RouterQueueMs > 0) {
			t.Fatalf("%s: queue waits %v %v %v", policy, *recs[0].RouterQueueMs, *recs[1].RouterQueueMs, *recs[2].RouterQueueMs)
		}
		if *recs[1].TTFTMs <= *recs[1].RouterQueueMs {
			t.Fatalf("%s: TTFT %v does not include the queue wait %v", policy, *recs[1].TTFTMs, *recs[1].RouterQueueMs)
		}
		var ids []uint64
		for _, i := range []int{1, 2} {
			if len(ids) == 0 || *recs[i].RouterQueueMs < *recs[ids[0]-1].RouterQueueMs {
				ids = append([]uint64{recs[i].UUID}, ids...)
			} else {
				ids = append(ids, recs[i].UUID)
			}
		}
		return ids
	}
	if got := order("fcfs"); got[0] != 2 {
		t.Errorf("fcfs placed %v first, want the oldest (2)", got)
	}
	if got := order("wspt"); got[0] != 3 {
		t.Errorf("wspt placed %v first, want the shortest (3)", got)
	}
}

// spy records what a policy saw: KV events observed before each placement.
type spy struct {
	router.Policy
	stored int // blocks stored by the events observed so far
	places []spyPlace
}

type spyPlace struct {
	id, at      uint64
	ok          bool
	stored      int
	overlapToks int
}

func (s *spy) Observe(w int, events []kv.Event) {
	for _, e := range events {
		if e.Kind == kv.Stored {
			s.stored += len(e.Blocks)
		}
	}
	s.Policy.Observe(w, events)
}

func (s *spy) Place(q *router.Request, v router.View) (router.Placement, bool) {
	pl, ok := s.Policy.Place(q, v)
	s.places = append(s.places, spyPlace{id: q.ID, at: uint64(q.Now), ok: ok, stored: s.stored, overlapToks: pl.Overlap})
	return pl, ok
}

// H5: KV events are visible only at pass ends. Two 64-token prefills start
// at 0 on two workers; a third request sharing the first's prompt arrives at
// 0.1 ms, when both workers are busy above the queue threshold: it is held,
// and the router has seen no stored block (0 overlap on every worker). Once
// a prefill ends it is placed, with the first request's blocks in view.
func TestH5KVRouterPassEndVisibility(t *testing.T) {
	ids := func(id int) string { return strings.TrimSuffix(strings.Repeat(fmt.Sprint(id)+",", 16), ",") }
	text := fmt.Sprintf(`{"timestamp":0,"input_length":64,"output_length":8,"hash_ids":[%s]}
{"timestamp":0,"input_length":64,"output_length":8,"hash_ids":[%s]}
{"timestamp":0.1,"input_length":64,"output_length":2,"hash_ids":[%s]}`, ids(11), ids(22), ids(11))
	cfg := engine.Config{BlockSize: 4, NumBlocks: 64, MaxBatchedTokens: 64, ChunkedPrefill: true, PrefixCaching: true, Events: true, Model: timing.Polynomial{}}
	kvr, err := router.NewKV(router.KVConfig{Cost: router.DefaultCostConfig(), BlockSize: 4, Seed: 1, UseEvents: true, Threshold: 0.5, MaxBatchedTokens: 64, QueuePolicy: "fcfs"})
	if err != nil {
		t.Fatal(err)
	}
	s := &spy{Policy: kvr}
	rep, err := Run(trace(t, text, 4), []Pool{{Name: "aggregated", Workers: workers(t, 2, cfg), Router: s, GPUs: 1}}, Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	var held, placed *spyPlace
	for i := range s.places {
		if p := &s.places[i]; p.id == 3 {
			if !p.ok && held == nil {
				held = p
			}
			if p.ok {
				placed = p
			}
		}
	}
	if held == nil || held.at != uint64(timing.FromMs(0.1)) || held.stored != 0 {
		t.Fatalf("request 3 at 0.1 ms: %+v, want held with no stored block in view", held)
	}
	if placed == nil || placed.stored == 0 || placed.overlapToks <= 0 || *rep.Requests()[2].RouterOverlapTokens != placed.overlapToks {
		t.Fatalf("request 3 placed: %+v, want the first prompt's blocks in view", placed)
	}
}

// H6: a multi-turn session whose second turn extends the first's prompt
// and output (the reference's delta workload, spelled out): turn 1 is one
// 4-token block with 5 output tokens, turn 2 is 12 tokens — turn 1's prompt,
// its first 4 output tokens and 4 new ones. 2 requests complete with 16
// input and 6 output tokens; the router saw 0, then 2 cached blocks.
func TestH6DeltaTurnReusesOutput(t *testing.T) {
	wl := &workload.Workload{
		Name: "h6", TraceBlock: 4, Timestamps: true, ByStart: []int32{0},
		Sessions: []workload.Session{{Turns: []workload.Turn{
			{Input: 4, Output: 5, Blocks: []uint32{1}, Planned: []uint32{2, 2, 2, 2, 9}},
			{Input: 12, Output: 1, Blocks: []uint32{1, 2, 3}},
		}}},
	}
	rep, err := Run(wl, kvPool(t, 1), Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s["completed_requests"] != 2 || s["total_input_tokens"] != 16 || s["total_output_tokens"] != 6 {
		t.Fatalf("summary: %v completed, %v in, %v out; want 2, 16, 6", s["completed_requests"], s["total_input_tokens"], s["total_output_tokens"])
	}
	var history []int
	for _, r := range rep.Requests() {
		history = append(history, *r.RouterOverlapTokens/4)
	}
	if !slices.Equal(history, []int{0, 2}) {
		t.Fatalf("router overlap history %v blocks, want [0 2]", history)
	}
}
