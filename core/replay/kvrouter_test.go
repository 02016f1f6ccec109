package replay

import (
	"fmt"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/router"
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
