package engine

// Regression tests for what the invariant fuzzer (invariant_fuzz_test.go)
// found, each reduced to the smallest stream that showed it.

import (
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Found by the invariant fuzzer: a waiting request whose allocation failed
// preempted a running one, whose requeue at the front of the queue then
// stood where the admitted request was popped from: one request was lost,
// another completed twice. A waiting request now waits instead.
func TestWaitingRequestNeverPreempts(t *testing.T) {
	cfg := Config{BlockSize: 2, NumBlocks: 5, ChunkedPrefill: true, PrefixCaching: true, Model: timing.Polynomial{}}
	c := mustCore(t, cfg)
	d := driver{c: c}
	if err := c.Submit(Request{ID: 1, Prompt: []uint32{1, 2, 3, 4}, Planned: []uint32{5}}); err != nil {
		t.Fatal(err)
	}
	d.drain(t, 10)
	if err := c.Submit(Request{ID: 2, Prompt: []uint32{1, 2, 3, 4}, Planned: []uint32{5, 6, 7, 8, 9, 10}}); err != nil {
		t.Fatal(err)
	}
	done := map[uint64]int{}
	tokens := map[uint64]int{}
	count := func(p *Pass) {
		for _, s := range p.Signals {
			if s.HasToken {
				tokens[s.ID]++
			}
			if s.Completed {
				done[s.ID]++
			}
		}
	}
	for range 3 {
		count(d.step())
	}
	submit(t, c, 3, []uint32{1, 2, 3, 4, 5, 6}, 2)
	for _, p := range d.drain(t, 100) {
		count(&p)
	}
	if done[2] != 1 || done[3] != 1 || tokens[2] != 6 || tokens[3] != 2 {
		t.Fatalf("completions %v tokens %v: want each request once with its own output", done, tokens)
	}
}

// Found by the invariant fuzzer: a pass that only recomputed a readmitted
// request's generated tokens (no prompt tokens, no signal) reported itself
// idle, so a driver would stall the worker until new work arrived.
func TestRecomputeOnlyPassIsBusy(t *testing.T) {
	c := mustCore(t, Config{BlockSize: 2, NumBlocks: 4, MaxBatchedTokens: 2, ChunkedPrefill: true, Model: timing.Polynomial{}})
	submit(t, c, 1, []uint32{100}, 5)
	submit(t, c, 2, []uint32{200}, 5)
	d := driver{c: c}
	for i := 0; !c.Empty(); i++ {
		if i == 100 {
			t.Fatal("core not empty")
		}
		if p := d.step(); !p.Busy {
			t.Fatalf("pass %d is not busy with %v running, %v waiting", i+1, c.RunningIDs(), c.WaitingIDs())
		}
	}
	if c.Metrics().Preemptions == 0 {
		t.Fatal("the setup no longer preempts")
	}
}

// Found by the invariant fuzzer: with speculation, a request whose burst
// reservation could not fit even in an otherwise empty pool preempted
// itself in every pass, forever. Its bursts are now bounded by the pool.
func TestSpeculationNearFullPoolCompletes(t *testing.T) {
	cfg := cfg4(8, 0, 0, false)
	cfg.BlockSize = 2
	cfg.Spec = Speculation{NextN: 2, AcceptRates: []float64{1, 1}, Seed: 1}
	c := mustCore(t, cfg)
	submit(t, c, 1, span(0, 16), 1)
	submit(t, c, 2, span(100, 114), 3)
	d := driver{c: c}
	tokens := map[uint64]int{}
	for _, p := range d.drain(t, 50) {
		for _, s := range p.Signals {
			if s.HasToken {
				tokens[s.ID]++
			}
		}
	}
	if tokens[1] != 1 || tokens[2] != 3 {
		t.Fatalf("tokens %v, want 1 and 3", tokens)
	}
}

// Found by the invariant fuzzer: a page evicted and stored again in one pass
// went out as Stored then Removed (removals waited for the end of the
// pass), so the router forgot a page the tree holds. rankDriver checks the
// stream.
func TestSGLangEvictAndRestoreInOnePass(t *testing.T) {
	c := mustSG(t, sgcfg(1, 6, 8))
	d := rankDriver{t: t, c: c}
	sgSubmit(t, c, 1, []uint32{7}, 0)
	d.drain(10)
	sgSubmit(t, c, 2, span(20, 25), 0)
	d.drain(10)
	sgSubmit(t, c, 3, []uint32{30}, 0)
	sgSubmit(t, c, 4, []uint32{7, 8}, 0)
	d.drain(10)
}

// Found by the invariant fuzzer: a runner that outgrew the whole pool (only
// ClipMaxNewTokens of its output is reserved at admission) stalled the
// rank, and an empty-prompt newcomer beside it was retracted in every pass
// at zero duration. The runner is now retracted and rejected; the newcomer
// runs.
func TestSGLangRunnerPastThePoolIsRejected(t *testing.T) {
	cfg := sgcfg(1, 8, 8)
	cfg.SGLang.ClipMaxNewTokens = 1
	c := mustSG(t, cfg)
	d := rankDriver{t: t, c: c}
	sgSubmit(t, c, 1, span(1, 5), 10)
	for range 3 {
		d.step()
	}
	sgSubmit(t, c, 2, nil, 2)
	status := map[uint64]string{}
	for _, p := range d.drain(100) {
		if !p.Busy && !c.Empty() {
			t.Fatal("a pass without work while holding requests")
		}
		for _, s := range p.Signals {
			if s.Completed {
				status[s.ID] = map[bool]string{true: "rejected", false: "completed"}[s.Rejected]
			}
		}
	}
	if status[1] != "rejected" || status[2] != "completed" {
		t.Fatalf("terminal %v, want 1 rejected (it outgrew the pool) and 2 completed", status)
	}
}
