package engine

import (
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// cfg4 is the reference test setup: polynomial timing, unscaled, chunked
// prefill, one rank.
func cfg4(blocks, budget, seqs int, caching bool) Config {
	return Config{
		BlockSize: 4, NumBlocks: blocks, MaxBatchedTokens: budget, MaxSeqs: seqs,
		ChunkedPrefill: true, PrefixCaching: caching, Model: timing.Polynomial{},
		Events: true,
	}
}

func mustCore(t *testing.T, cfg Config) *Core {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func span(lo, hi uint32) []uint32 {
	var out []uint32
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

func submit(t *testing.T, c *Core, id uint64, prompt []uint32, out int) {
	t.Helper()
	if err := c.Submit(Request{ID: id, Prompt: prompt, MaxOutput: out}); err != nil {
		t.Fatal(err)
	}
}

// driver steps a core the way the reference tests do.
type driver struct {
	c *Core
	t timing.Time
}

func (d *driver) step() *Pass {
	p := d.c.Step(d.t)
	d.t = max(p.End, d.t+timing.FromMs(1))
	return p
}

func (d *driver) drain(t *testing.T, limit int) (passes []Pass) {
	t.Helper()
	for i := 0; !d.c.Empty(); i++ {
		if i == limit {
			t.Fatalf("core not empty after %d passes", limit)
		}
		p := d.step()
		passes = append(passes, clonePass(p))
	}
	return passes
}

func clonePass(p *Pass) Pass {
	q := *p
	q.Signals = slices.Clone(p.Signals)
	q.Admissions = slices.Clone(p.Admissions)
	return q
}

func TestV1PlannedOutputTokensAreEmittedExactly(t *testing.T) {
	c := mustCore(t, cfg4(6, 8, 3, false))
	if err := c.Submit(Request{ID: 1, Prompt: []uint32{1, 2}, Planned: []uint32{101, 202, 303}}); err != nil {
		t.Fatal(err)
	}
	d := driver{c: c}
	var toks []uint32
	for i := range 3 {
		p := d.step()
		if len(p.Signals) != 1 {
			t.Fatalf("pass %d: %d signals", i, len(p.Signals))
		}
		s := p.Signals[0]
		toks = append(toks, s.Token)
		if want := map[bool]int{true: 0, false: -1}[i == 0]; s.Cached != want {
			t.Errorf("pass %d: cached %d, want %d", i, s.Cached, want)
		}
	}
	if !slices.Equal(toks, []uint32{101, 202, 303}) || !c.Empty() {
		t.Fatalf("tokens %v, empty %v", toks, c.Empty())
	}
}

func TestV2PartialPrefillStaysRunning(t *testing.T) {
	c := mustCore(t, cfg4(6, 12, 3, false))
	submit(t, c, 1, span(0, 8), 2)
	submit(t, c, 2, span(100, 108), 2)
	p := c.Step(0)
	if len(p.Signals) != 1 || p.Signals[0].ID != 1 {
		t.Fatalf("signals %+v", p.Signals)
	}
	if !slices.Equal(c.RunningIDs(), []uint64{1, 2}) || len(c.WaitingIDs()) != 0 {
		t.Fatalf("running %v waiting %v", c.RunningIDs(), c.WaitingIDs())
	}
	r1, _ := c.State(1)
	r2, _ := c.State(2)
	if r1.Computed != 8 || r2.Computed != 4 || r1.Generated != 1 {
		t.Fatalf("r1 %+v r2 %+v", r1, r2)
	}
	if p.Metrics.ActiveBlocks != 3 || p.Metrics.Running != 2 || p.Metrics.Waiting != 0 {
		t.Fatalf("metrics %+v", p.Metrics)
	}
}

func TestV3RunningConsumeBudgetBeforeWaiting(t *testing.T) {
	c := mustCore(t, cfg4(16, 4, 3, false))
	submit(t, c, 1, span(0, 8), 2)
	submit(t, c, 2, span(100, 108), 2)
	d := driver{c: c}
	d.step()
	p := d.step()
	if len(p.Signals) != 1 || p.Signals[0].ID != 1 {
		t.Fatalf("pass 2 signals %+v", p.Signals)
	}
	if r2, _ := c.State(2); r2.Computed != 0 {
		t.Fatalf("r2 computed %d", r2.Computed)
	}
}

func TestV4TwoReadyRequestsBatchTogether(t *testing.T) {
	c := mustCore(t, cfg4(16, 8, 4, false))
	submit(t, c, 1, span(0, 4), 1)
	submit(t, c, 2, span(100, 104), 1)
	p := c.Step(0)
	if len(p.Admissions) != 2 || len(p.Signals) != 2 || !p.Signals[0].Completed || !p.Signals[1].Completed {
		t.Fatalf("admissions %+v signals %+v", p.Admissions, p.Signals)
	}
}

func TestV6FirstTokenOnPromptCompletionPass(t *testing.T) {
	c := mustCore(t, cfg4(6, 8, 3, false))
	submit(t, c, 1, span(0, 8), 2)
	p := c.Step(0)
	if len(p.Signals) != 1 || p.Signals[0].Completed || !p.Signals[0].HasToken {
		t.Fatalf("signals %+v", p.Signals)
	}
	if r, _ := c.State(1); r.Generated != 1 {
		t.Fatalf("generated %d", r.Generated)
	}
}

func TestV7PreemptionRequeuesNewest(t *testing.T) {
	cfg := cfg4(6, 16, 2, false)
	c := mustCore(t, cfg)
	submit(t, c, 1, span(0, 8), 8)
	submit(t, c, 2, span(100, 108), 8)
	d := driver{c: c}
	for i := 0; c.preemptions == 0; i++ {
		if i == 20 {
			t.Fatal("no preemption")
		}
		d.step()
	}
	r2, _ := c.State(2)
	if !r2.Preempted || r2.Computed != 0 || r2.Preemptions != 1 {
		t.Fatalf("r2 %+v", r2)
	}
	if w := c.WaitingIDs(); len(w) == 0 || w[0] != 2 {
		t.Fatalf("waiting %v", w)
	}
	if c.Metrics().Preemptions != 1 {
		t.Fatalf("preemptions %d", c.Metrics().Preemptions)
	}
	d.drain(t, 100)
}

func TestV8FullISLGateBlocksWithoutSkipAhead(t *testing.T) {
	c := mustCore(t, cfg4(6, 16, 3, false))
	submit(t, c, 1, span(0, 16), 1)
	submit(t, c, 2, span(100, 112), 1)
	submit(t, c, 3, span(200, 204), 1)
	d := driver{c: c}
	p := d.step()
	if len(p.Signals) != 1 || p.Signals[0].ID != 1 || !p.Signals[0].Completed {
		t.Fatalf("pass 1 signals %+v", p.Signals)
	}
	if w := c.WaitingIDs(); !slices.Equal(w, []uint64{2, 3}) {
		t.Fatalf("waiting %v", w)
	}
	p = d.step()
	if len(p.Admissions) == 0 || p.Admissions[0].ID != 2 || c.preemptions != 0 {
		t.Fatalf("pass 2 admissions %+v preemptions %d", p.Admissions, c.preemptions)
	}
}

func TestV9OversizedRejectedFollowerRuns(t *testing.T) {
	c := mustCore(t, cfg4(4, 32, 2, false))
	submit(t, c, 1, span(0, 20), 1)
	submit(t, c, 2, span(100, 104), 1)
	p := c.Step(0)
	var rejected bool
	for _, s := range p.Signals {
		if s.ID == 1 && s.Rejected && s.Completed {
			rejected = true
		}
	}
	if !rejected || len(p.Admissions) != 1 || p.Admissions[0].ID != 2 || c.preemptions != 0 {
		t.Fatalf("signals %+v admissions %+v", p.Signals, p.Admissions)
	}
	// Rejections come last.
	if last := p.Signals[len(p.Signals)-1]; !last.Rejected {
		t.Fatalf("last signal %+v", last)
	}
}

func TestV10CompletionReturnsToIdle(t *testing.T) {
	c := mustCore(t, cfg4(6, 8, 3, false))
	submit(t, c, 1, span(0, 8), 2)
	submit(t, c, 2, span(0, 8), 2)
	d := driver{c: c}
	d.drain(t, 50)
	if c.waiting.len() != 0 || len(c.running) != 0 || c.Pool().Active() != 0 {
		t.Fatalf("not idle: %+v", c.Metrics())
	}
}

func TestV11ZeroOutputCompletesAfterPrefill(t *testing.T) {
	for _, pol := range []Policy{VLLM, TRTLLM} {
		cfg := cfg4(6, 8, 3, false)
		cfg.Policy = pol
		c := mustCore(t, cfg)
		submit(t, c, 1, []uint32{1, 2, 3, 4}, 0)
		p := c.Step(0)
		if len(p.Signals) != 1 {
			t.Fatalf("policy %d: signals %+v", pol, p.Signals)
		}
		s := p.Signals[0]
		if s.HasToken || !s.Completed || s.Rejected || s.Cached != 0 {
			t.Fatalf("policy %d: signal %+v", pol, s)
		}
		if p.Metrics.ActiveBlocks != 0 || p.FPM.DecodeRequests != 0 || !c.Empty() {
			t.Fatalf("policy %d: metrics %+v fpm %+v", pol, p.Metrics, p.FPM)
		}
	}
}

func TestV12FullyCachedZeroOutputIsNotWork(t *testing.T) {
	c := mustCore(t, cfg4(12, 12, 3, true))
	submit(t, c, 1, []uint32{1, 2, 3, 4}, 0)
	d := driver{c: c}
	d.step()
	submit(t, c, 2, []uint32{1, 2, 3, 4}, 0)
	p := d.step()
	if len(p.Signals) != 1 || !p.Signals[0].Completed || p.Signals[0].Cached != 4 {
		t.Fatalf("signals %+v", p.Signals)
	}
	if p.FPM.PrefillRequests != 0 || p.FPM.DecodeRequests != 0 {
		t.Fatalf("fpm %+v", p.FPM)
	}
}

func TestV16to19FPM(t *testing.T) {
	t.Run("single prefill", func(t *testing.T) {
		c := mustCore(t, cfg4(16, 16, 4, false))
		submit(t, c, 1, span(0, 8), 1)
		f := c.Step(0).FPM
		if f.PrefillRequests != 1 || f.PrefillTokens != 8 || f.PrefillKVTokens != 0 || f.QueuedPrefill != 0 || f.WallTimeSecs() <= 0 {
			t.Fatalf("fpm %+v", f)
		}
	})
	t.Run("variance", func(t *testing.T) {
		c := mustCore(t, cfg4(32, 32, 4, false))
		submit(t, c, 1, span(0, 4), 1)
		submit(t, c, 2, span(100, 112), 1)
		f := c.Step(0).FPM
		if f.PrefillRequests != 2 || f.VarPrefillLength != 16 {
			t.Fatalf("fpm %+v", f)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		c := mustCore(t, cfg4(16, 8, 4, false))
		submit(t, c, 1, span(0, 16), 2)
		d := driver{c: c}
		f1, f2 := d.step().FPM, d.step().FPM
		if f1.PrefillRequests != 1 || f2.PrefillRequests != 1 || f1.PrefillTokens > 8 || f2.PrefillTokens > 8 ||
			f1.PrefillTokens+f2.PrefillTokens != 16 || f1.VarPrefillLength != 0 || f2.VarPrefillLength != 0 {
			t.Fatalf("fpm %+v %+v", f1, f2)
		}
	})
	t.Run("mixed", func(t *testing.T) {
		c := mustCore(t, cfg4(16, 16, 4, false))
		submit(t, c, 1, span(0, 4), 3)
		d := driver{c: c}
		d.step()
		submit(t, c, 2, span(100, 104), 3)
		f := d.step().FPM
		if f.PrefillRequests != 1 || f.PrefillTokens != 4 || f.DecodeRequests < 1 || f.DecodeKVTokens <= 0 {
			t.Fatalf("fpm %+v", f)
		}
	})
}

// P2, P3: vLLM's final-token recompute.
func TestPrefixCostRecompute(t *testing.T) {
	c := mustCore(t, cfg4(8, 16, 2, true))
	submit(t, c, 1, span(0, 8), 1)
	d := driver{c: c}
	d.drain(t, 10)
	submit(t, c, 2, span(0, 8), 1)
	s := c.find(2)
	if cs := c.prefixCost(s); cs.cached != 4 {
		t.Fatalf("P2: block-aligned full hit cached %d, want 4", cs.cached)
	}
	// P3: a preempted 9-token sequence with 8 cached keeps 8 cached.
	s.length = 9
	s.hashes = s.hashes[:2]
	if cs := c.prefixCost(s); cs.cached != 8 {
		t.Fatalf("P3: cached %d, want 8", cs.cached)
	}
	trt := cfg4(8, 16, 2, true)
	trt.Policy = TRTLLM
	ct := mustCore(t, trt)
	submit(t, ct, 1, span(0, 8), 1)
	(&driver{c: ct}).drain(t, 10)
	submit(t, ct, 2, span(0, 8), 1)
	if _, cs := ct.admission(ct.find(2)); cs.cached != 8 {
		t.Fatalf("P2 trtllm: cached %d, want 8", cs.cached)
	}
}

// P4–P6: the admission examples of spec §2.4.
func TestP4to6Admission(t *testing.T) {
	t.Run("future output not reserved", func(t *testing.T) {
		c := mustCore(t, cfg4(4, 64, 4, false))
		submit(t, c, 1, span(0, 8), 32)
		if dec, _ := c.admission(c.find(1)); dec != admit {
			t.Fatal("want admit")
		}
	})
	t.Run("wait", func(t *testing.T) {
		c := mustCore(t, cfg4(4, 64, 4, false))
		submit(t, c, 1, span(0, 12), 8)
		c.Step(0)
		submit(t, c, 2, span(100, 108), 1)
		if dec, _ := c.admission(c.find(2)); dec != wait {
			t.Fatalf("want wait, active %d", c.Pool().Active())
		}
	})
	t.Run("reject", func(t *testing.T) {
		c := mustCore(t, cfg4(4, 64, 4, false))
		submit(t, c, 1, span(0, 20), 1)
		if dec, _ := c.admission(c.find(1)); dec != reject {
			t.Fatal("want reject")
		}
	})
	t.Run("active prefix discounted", func(t *testing.T) {
		c := mustCore(t, cfg4(3, 64, 4, true))
		submit(t, c, 1, span(0, 8), 8)
		c.Step(0)
		submit(t, c, 2, span(0, 12), 1)
		if dec, _ := c.admission(c.find(2)); dec != admit {
			t.Fatalf("want admit (active %d)", c.Pool().Active())
		}
	})
	t.Run("inactive prefix not discounted", func(t *testing.T) {
		c := mustCore(t, cfg4(3, 64, 4, true))
		submit(t, c, 1, span(0, 8), 1)
		d := driver{c: c}
		d.drain(t, 10)
		submit(t, c, 3, span(200, 203), 8) // unrelated 1-block holder
		d.step()
		submit(t, c, 2, span(0, 12), 1)
		if dec, _ := c.admission(c.find(2)); dec != wait {
			t.Fatalf("want wait (active %d inactive %d)", c.Pool().Active(), c.Pool().Inactive())
		}
	})
}

// P7: max_model_len rejects long prompts and stops generation at the limit.
func TestP7MaxModelLen(t *testing.T) {
	cfg := cfg4(16, 64, 4, false)
	cfg.MaxModelLen = 8
	c := mustCore(t, cfg)
	submit(t, c, 1, span(0, 8), 4)
	submit(t, c, 2, span(100, 109), 4)
	submit(t, c, 3, span(200, 207), 4)
	d := driver{c: c}
	var rejected []uint64
	tokens := map[uint64]int{}
	for _, p := range d.drain(t, 20) {
		for _, s := range p.Signals {
			if s.Rejected {
				rejected = append(rejected, s.ID)
			}
			if s.HasToken {
				tokens[s.ID]++
			}
		}
	}
	slices.Sort(rejected)
	if !slices.Equal(rejected, []uint64{1, 2}) || tokens[3] != 1 {
		t.Fatalf("rejected %v tokens %v", rejected, tokens)
	}
}

// P8 (native) and P9: repeat-prompt occupancy and same-pass reuse.
func TestP8P9PrefixReuse(t *testing.T) {
	c := mustCore(t, cfg4(8, 16, 2, true))
	submit(t, c, 1, span(0, 8), 1)
	d := driver{c: c}
	d.drain(t, 10)
	submit(t, c, 2, span(0, 8), 1)
	p := d.step()
	if p.Admissions[0].Reused != 4 {
		t.Fatalf("P8 reuse %d", p.Admissions[0].Reused)
	}
	d.drain(t, 10)
	if c.Pool().Active() != 0 || c.Pool().Inactive() != 3 {
		t.Fatalf("P8 occupancy active %d inactive %d, want 0/3", c.Pool().Active(), c.Pool().Inactive())
	}

	c = mustCore(t, cfg4(8, 16, 2, true))
	submit(t, c, 1, span(0, 8), 2)
	submit(t, c, 2, span(0, 8), 2)
	p = c.Step(0)
	if len(p.Admissions) != 2 || p.Admissions[0].Reused != 0 || p.Admissions[1].Reused != 4 {
		t.Fatalf("P9 admissions %+v", p.Admissions)
	}
	if c.Pool().Active() != 3 || len(c.find(1).lease.Slots) != 2 || len(c.find(2).lease.Slots) != 2 {
		t.Fatalf("P9 active %d", c.Pool().Active())
	}
	if len(p.Events) != 1 || len(p.Events[0].Blocks) != 2 {
		t.Fatalf("P9 events %+v", p.Events)
	}
}

// Stored events chain correctly and none are emitted without caching.
func TestEventsOnlyWithCaching(t *testing.T) {
	for _, caching := range []bool{true, false} {
		c := mustCore(t, cfg4(64, 16, 4, caching))
		for i := range 6 {
			submit(t, c, uint64(i+1), span(0, 13), 6)
		}
		d := driver{c: c}
		stored := 0
		var ids []uint64
		for !c.Empty() {
			for _, e := range d.step().Events {
				ids = append(ids, e.ID)
				stored++
			}
		}
		if caching && stored == 0 || !caching && stored != 0 {
			t.Fatalf("caching %v: %d events", caching, stored)
		}
		for i, id := range ids {
			if id != uint64(i) {
				t.Fatalf("event ids %v", ids)
			}
		}
	}
}

// V5 and T5: a prefill worker completes with its first token and reports the
// line-rate KV transfer time of the prompt.
func TestV5T5PrefillHandoffDelay(t *testing.T) {
	tests := []struct {
		prompt, out int
		want        float64
	}{{8, 1, 8.0}, {128, 1, 128.0}, {8, 4, 8.0}}
	for _, tc := range tests {
		cfg := cfg4(64, 256, 1, false)
		cfg.Prefill = &Handoff{KVBytesPerToken: 1e6, BandwidthGBps: 1}
		c := mustCore(t, cfg)
		submit(t, c, 1, span(0, uint32(tc.prompt)), tc.out)
		p := c.Step(0)
		if len(p.Signals) != 1 {
			t.Fatalf("prompt %d: signals %+v", tc.prompt, p.Signals)
		}
		s := p.Signals[0]
		if !s.Completed || !s.HasToken || s.HandoffMs != tc.want || !c.Empty() {
			t.Fatalf("prompt %d: signal %+v, want completed with handoff %v", tc.prompt, s, tc.want)
		}
		// No decode step is charged: the pass is the prefill alone.
		if want := cfg.Scale.Prefill(cfg.Model, 1, tc.prompt, 0); p.End != want {
			t.Fatalf("pass ends at %v, want the prefill time %v", p.End, want)
		}
	}
	// Bandwidth 0 disables the delay; aggregated workers never report one.
	cfg := cfg4(64, 256, 1, false)
	cfg.Prefill = &Handoff{KVBytesPerToken: 1e6}
	c := mustCore(t, cfg)
	submit(t, c, 1, span(0, 8), 1)
	if s := c.Step(0).Signals[0]; s.HandoffMs != 0 {
		t.Fatalf("bandwidth 0: handoff %v", s.HandoffMs)
	}
}

// A request readmitted after preemption reports what that admission reused
// from the prefix cache (its own blocks, cached when it was preempted), not
// what its first admission reused.
func TestReadmissionReportsItsOwnReuse(t *testing.T) {
	c := mustCore(t, cfg4(6, 16, 2, true))
	submit(t, c, 1, span(0, 8), 8)
	submit(t, c, 2, span(100, 108), 8)
	d := driver{c: c}
	var reuse []int
	for i := 0; !c.Empty(); i++ {
		if i == 100 {
			t.Fatal("core not empty")
		}
		for _, a := range d.step().Admissions {
			if a.ID == 2 {
				reuse = append(reuse, a.Reused)
			}
		}
	}
	if len(reuse) < 2 || reuse[0] != 0 || reuse[len(reuse)-1] == 0 {
		t.Fatalf("admissions of the preempted request reused %v tokens; want 0 first, then its cached blocks", reuse)
	}
}
