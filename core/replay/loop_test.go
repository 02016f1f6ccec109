package replay

import (
	"bytes"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// gate is a test policy: it places on worker 0 only while that worker is
// idle (nothing running or waiting), holds requests otherwise, and records
// when KV events and terminals reach it.
type gate struct {
	l        *Loop
	placedAt map[uint64]timing.Time
	events   []timing.Time // loop time at each Observe
	stored   int
	finished int
	added    []int
}

func (g *gate) Place(r *router.Request, v router.View) (router.Placement, bool) {
	if ld := v.Load(0); ld.Running+ld.Waiting > 0 {
		return router.Placement{}, false
	}
	g.placedAt[r.ID] = g.l.Now()
	return router.Placement{Worker: 0, Rank: 0}, true
}

func (g *gate) Observe(_ int, events []kv.Event) {
	g.events = append(g.events, g.l.Now())
	for _, e := range events {
		if e.Kind == kv.Stored {
			g.stored += len(e.Blocks)
		}
	}
}

func (g *gate) Finished(uint64, timing.Time)    { g.finished++ }
func (g *gate) PrefillDone(uint64, timing.Time) {}
func (g *gate) Next([]uint64) int               { return 0 }
func (g *gate) Added(w int)                     { g.added = append(g.added, w) }
func (g *gate) Removed(int)                     {}

const threeAtOnce = `{"timestamp":0,"input_length":8,"output_length":3,"hash_ids":[1,2]}
{"timestamp":0,"input_length":8,"output_length":3,"hash_ids":[1,2]}
{"timestamp":0,"input_length":8,"output_length":3,"hash_ids":[1,2]}`

// A policy may hold requests: they wait in the loop, in arrival order, and
// are offered again when a pass ends; their arrival time stays the release
// time, so the wait counts in their TTFT. KV events reach the policy at the
// end of the pass that stored them, and every terminal is reported.
func TestRouterHoldsAndObserves(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 64, ChunkedPrefill: true, PrefixCaching: true, Events: true, Model: timing.Polynomial{}}
	g := &gate{placedAt: map[uint64]timing.Time{}}
	l, err := New(trace(t, threeAtOnce, 4), []Pool{{Name: "aggregated", Workers: workers(t, 2, cfg), Router: g, GPUs: 1}}, Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	g.l = l
	if _, err := l.RunUntil(1 << 62); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Report()
	if err != nil {
		t.Fatal(err)
	}
	recs := rep.Requests()
	for i, r := range recs {
		if r.ArrivalTimeMs != 0 || r.TerminalStatus != "completed" {
			t.Fatalf("request %d: %+v", i+1, r)
		}
		// Each waits for the previous one to finish.
		if i > 0 && !(g.placedAt[r.UUID].Ms() >= *recs[i-1].TerminalTimeMs && *r.TTFTMs > *recs[i-1].E2ELatencyMs) {
			t.Fatalf("request %d placed at %v, TTFT %v; the previous ended at %v", r.UUID, g.placedAt[r.UUID], *r.TTFTMs, *recs[i-1].TerminalTimeMs)
		}
	}
	if g.finished != 3 || len(g.added) != 2 || g.stored == 0 {
		t.Fatalf("finished %d added %v stored %d", g.finished, g.added, g.stored)
	}
	for _, at := range g.events {
		if at == 0 {
			t.Fatal("KV events observed at time 0: before the storing pass ended")
		}
	}
}

// Stepping the loop to successive times gives the run's report, byte for
// byte, and never moves the clock past the limit.
func TestRunUntilInSteps(t *testing.T) {
	cfg := engine.Config{BlockSize: 4, NumBlocks: 32, MaxBatchedTokens: 8, MaxSeqs: 2, ChunkedPrefill: true, Model: timing.Polynomial{}}
	text := `{"timestamp":0,"input_length":8,"output_length":4,"hash_ids":[1,2]}
{"timestamp":40,"input_length":16,"output_length":2,"hash_ids":[3,4,5,6]}
{"timestamp":90,"input_length":8,"output_length":6,"hash_ids":[1,7]}`
	whole, err := Run(trace(t, text, 4), agg(workers(t, 2, cfg)), Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(trace(t, text, 4), agg(workers(t, 2, cfg)), Options{Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	for limit := timing.Time(0); ; limit += timing.FromMs(7) {
		done, err := l.RunUntil(limit)
		if err != nil {
			t.Fatal(err)
		}
		if l.Now() > limit {
			t.Fatalf("clock %v past the limit %v", l.Now(), limit)
		}
		if done {
			break
		}
	}
	stepped, err := l.Report()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := whole.JSON()
	b, _ := stepped.JSON()
	if !bytes.Equal(a, b) || !bytes.Equal(whole.RequestsJSONL(), stepped.RequestsJSONL()) {
		t.Fatal("stepped run differs from the whole run")
	}
}
