package engine

import (
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

func trt(blocks, budget, seqs int, caching bool) Config {
	c := cfg4(blocks, budget, seqs, caching)
	c.Policy = TRTLLM
	return c
}

func mtp(c Config, rates ...float64) Config {
	c.Spec = Speculation{NextN: len(rates), AcceptRates: rates}
	return c
}

// outcome of draining a core: completed, rejected and tokens per request.
type drained struct {
	completed, rejected []uint64
	tokens              map[uint64]int
	preemptions         int
	maxRunning          int
}

func drainAll(t *testing.T, c Rank, limit int) drained {
	t.Helper()
	d := rankDriver{t: t, c: c}
	out := drained{tokens: map[uint64]int{}}
	for _, p := range d.drain(limit) {
		out.maxRunning = max(out.maxRunning, p.Metrics.Running)
		for _, s := range p.Signals {
			switch {
			case s.Rejected:
				out.rejected = append(out.rejected, s.ID)
			case s.Completed:
				out.completed = append(out.completed, s.ID)
			}
			if s.HasToken {
				out.tokens[s.ID]++
			}
		}
	}
	out.preemptions = c.Metrics().Preemptions
	return out
}

// P10: GUARANTEED_NO_EVICT admits only what fits to completion; vLLM
// admits both.
func TestP10TRTReservesToCompletion(t *testing.T) {
	for _, tc := range []struct {
		policy  Policy
		running []uint64
	}{{TRTLLM, []uint64{1}}, {VLLM, []uint64{1, 2}}} {
		cfg := cfg4(6, 16, 4, false)
		cfg.Policy = tc.policy
		c := mustCore(t, cfg)
		submit(t, c, 1, span(0, 8), 8)
		submit(t, c, 2, span(100, 108), 8)
		c.Step(0)
		if !slices.Equal(c.RunningIDs(), tc.running) || c.Metrics().Preemptions != 0 {
			t.Fatalf("policy %d: running %v waiting %v", tc.policy, c.RunningIDs(), c.WaitingIDs())
		}
		if tc.policy == TRTLLM && !slices.Equal(c.WaitingIDs(), []uint64{2}) {
			t.Fatalf("waiting %v", c.WaitingIDs())
		}
	}
}

// P11: a preemption-inducing workload with MTP never preempts on TRT-LLM.
func TestP11TRTWithMTPNeverPreempts(t *testing.T) {
	c := mustCore(t, mtp(trt(4, 8, 4, false), 1, 1))
	submit(t, c, 1, span(0, 4), 12)
	submit(t, c, 2, span(100, 104), 12)
	r := drainAll(t, c, 100)
	if len(r.completed) != 2 || r.preemptions != 0 || r.tokens[1] != 12 || r.tokens[2] != 12 || r.maxRunning != 1 {
		t.Fatalf("%+v", r)
	}
}

// P12: the hardware-parity scenario (B200, MiniMax-M2.5, TP4): 64 requests
// of 1096 tokens + 7000 outputs on 7319 blocks of 32 → 28 running after 40
// passes.
func TestP12TRTHardwareParity(t *testing.T) {
	c := mustCore(t, Config{
		Policy: TRTLLM, BlockSize: 32, NumBlocks: 7319, MaxBatchedTokens: 8192, MaxSeqs: 256,
		ChunkedPrefill: true, Model: timing.Polynomial{},
	})
	for i := range 64 {
		submit(t, c, uint64(i+1), span(uint32(i*10000), uint32(i*10000+1096)), 7000)
	}
	d := driver{c: c}
	for range 40 {
		d.step()
	}
	if m := c.Metrics(); m.Running != 28 || m.Waiting != 36 || m.Preemptions != 0 {
		t.Fatalf("%+v", m)
	}
}

// P13, P14: enqueue clamp; oversized prompt rejected, follower completes.
func TestP13P14TRTClampAndReject(t *testing.T) {
	c := mustCore(t, trt(4, 64, 4, false))
	submit(t, c, 1, span(0, 4), 40)
	r := drainAll(t, c, 100)
	if r.tokens[1] != 12 || !slices.Equal(r.completed, []uint64{1}) {
		t.Fatalf("P13 %+v", r)
	}
	c = mustCore(t, trt(4, 64, 4, false))
	submit(t, c, 1, span(0, 20), 4)
	submit(t, c, 2, span(100, 104), 4)
	r = drainAll(t, c, 100)
	if !slices.Equal(r.rejected, []uint64{1}) || !slices.Equal(r.completed, []uint64{2}) || r.tokens[2] != 4 {
		t.Fatalf("P14 %+v", r)
	}
}

// P15: an inactive cached prefix is not discounted: the reuser waits for
// the holder.
func TestP15TRTInactivePrefixNotDiscounted(t *testing.T) {
	c := mustCore(t, trt(8, 64, 4, true))
	submit(t, c, 1, span(0, 4), 12)    // holder: 4 blocks to completion
	submit(t, c, 2, span(100, 108), 4) // seeder: 3 blocks
	d := driver{c: c}
	for c.find(2) != nil {
		d.step()
	}
	if c.find(1) == nil {
		t.Fatal("holder finished before the seeder")
	}
	submit(t, c, 3, span(100, 108), 12) // reuser: 5 blocks
	for c.find(1) != nil {
		d.step()
		if st, _ := c.State(3); st.Running {
			t.Fatal("reuser admitted while the holder runs")
		}
	}
	d.drain(t, 100)
	if c.Metrics().Preemptions != 0 {
		t.Fatal("preempted")
	}
}

// P16: the size check uses the undiscounted footprint.
func TestP16TRTRejectsUndiscountedFootprint(t *testing.T) {
	c := mustCore(t, trt(8, 64, 4, true))
	submit(t, c, 1, span(0, 8), 8)
	d := driver{c: c}
	d.step()
	submit(t, c, 2, span(0, 32), 8)
	p := d.step()
	if !slices.ContainsFunc(p.Signals, func(s Signal) bool { return s.ID == 2 && s.Rejected }) {
		t.Fatalf("signals %+v", p.Signals)
	}
}

// P1: MTP recomputes one more cached block on vLLM, not on TRT-LLM.
func TestP1MTPPrefixRecompute(t *testing.T) {
	for _, tc := range []struct {
		cfg                  Config
		cached, activeCached int
	}{
		{cfg4(3, 64, 4, true), 8, 8},
		{mtp(cfg4(3, 64, 4, true), 1), 4, 4},
		{mtp(trt(8, 64, 4, true), 1), 8, 8},
	} {
		c := mustCore(t, tc.cfg)
		submit(t, c, 1, span(0, 8), 8)
		c.Step(0)
		submit(t, c, 2, span(0, 12), 1)
		s := c.find(2)
		var cs cost
		if tc.cfg.Policy == TRTLLM {
			_, cs = c.admission(s)
		} else {
			cs = c.prefixCost(s)
		}
		if cs.cached != tc.cached || cs.activeCached != tc.activeCached {
			t.Fatalf("policy %d spec %d: %+v", tc.cfg.Policy, tc.cfg.Spec.NextN, cs)
		}
	}
}

// V14: MTP recomputes the last cached block of a repeated prefix.
func TestV14MTPRecomputesLastPrefixBlock(t *testing.T) {
	for _, tc := range []struct {
		cfg                Config
		reused, tokens, kv int
	}{
		{cfg4(16, 16, 1, true), 8, 4, 8},
		{mtp(cfg4(16, 16, 1, true), 1), 4, 8, 4},
	} {
		c := mustCore(t, tc.cfg)
		submit(t, c, 1, span(0, 8), 1)
		d := driver{c: c}
		d.drain(t, 10)
		submit(t, c, 2, span(0, 12), 1)
		p := d.step()
		if p.Admissions[0].Reused != tc.reused || p.FPM.PrefillTokens != tc.tokens || p.FPM.PrefillKVTokens != tc.kv {
			t.Fatalf("spec %d: reused %d fpm %+v", tc.cfg.Spec.NextN, p.Admissions[0].Reused, p.FPM)
		}
	}
}

// V15: unused burst reservations are returned (native and KVBM).
func TestV15MTPReleasesUnusedReservations(t *testing.T) {
	for _, g1 := range []G1Backend{NativeG1, KVBMG1} {
		cfg := mtp(Config{BlockSize: 2, NumBlocks: 8, MaxBatchedTokens: 8, MaxSeqs: 2, ChunkedPrefill: true, Model: timing.Polynomial{}}, 0, 1)
		cfg.G1 = g1
		c := mustCore(t, cfg)
		submit(t, c, 1, span(0, 3), 5)
		p := c.Step(0)
		st, _ := c.State(1)
		if len(p.Signals) != 1 || p.Metrics.ActiveBlocks != 2 || st.Generated != 1 || st.Length-st.Computed != 1 {
			t.Fatalf("g1 %d: signals %d active %d state %+v", g1, len(p.Signals), p.Metrics.ActiveBlocks, st)
		}
	}
}

// MTP under pressure on vLLM: reservations preempt, everything completes
// and pages are conserved.
func TestMTPUnderPressure(t *testing.T) {
	for _, g1 := range []G1Backend{NativeG1, KVBMG1} {
		cfg := mtp(cfg4(12, 16, 8, true), 0.9, 0.6, 0.3)
		cfg.G1 = g1
		c := mustCore(t, cfg)
		for i := range 12 {
			submit(t, c, uint64(i+1), append(span(0, 4), span(uint32(100*i+100), uint32(100*i+103))...), 10)
		}
		r := drainAll(t, c, 1000)
		m := c.Metrics()
		if len(r.completed) != 12 || r.preemptions == 0 || c.Pool().Active() != 0 || m.AcceptedTokens != 120 || m.DecodeForwards >= 120 {
			t.Fatalf("g1 %d: %+v metrics %+v active %d", g1, r, m, c.Pool().Active())
		}
	}
}

// P8 on KVBM: the recomputed tail collapses onto the cached block
// (native keeps 3 inactive copies, KVBM 2); P9's same-pass duplicate tail
// is shared too (native 3 active slots, KVBM 2), and events agree.
func TestP8P9KVBM(t *testing.T) {
	cfg := cfg4(8, 16, 2, true)
	cfg.G1 = KVBMG1
	c := mustCore(t, cfg)
	submit(t, c, 1, span(0, 8), 1)
	d := driver{c: c}
	d.drain(t, 10)
	submit(t, c, 2, span(0, 8), 1)
	p := d.step()
	if p.Admissions[0].Reused != 4 {
		t.Fatalf("P8 reuse %d", p.Admissions[0].Reused)
	}
	d.drain(t, 10)
	if c.Pool().Active() != 0 || c.Pool().Inactive() != 2 {
		t.Fatalf("P8 occupancy %d/%d, want 0/2", c.Pool().Active(), c.Pool().Inactive())
	}

	c = mustCore(t, cfg)
	submit(t, c, 1, span(0, 8), 2)
	submit(t, c, 2, span(0, 8), 2)
	p = c.Step(0)
	if len(p.Admissions) != 2 || p.Admissions[1].Reused != 4 || c.Pool().Active() != 2 {
		t.Fatalf("P9 admissions %+v active %d", p.Admissions, c.Pool().Active())
	}
	if len(p.Events) != 1 || len(p.Events[0].Blocks) != 2 {
		t.Fatalf("P9 events %+v", p.Events)
	}
}

// T3: burst sampling.
func TestT3BurstSampler(t *testing.T) {
	for _, tc := range []struct {
		rates     []float64
		remaining int
		want      int
	}{
		{[]float64{0, 1}, 10, 1},
		{[]float64{1, 1}, 10, 3},
		{[]float64{1, 0, 1}, 10, 2},
		{[]float64{1, 1}, 2, 2},
		{[]float64{1, 1}, 0, 0},
	} {
		s, err := newSampler(Speculation{NextN: len(tc.rates), AcceptRates: tc.rates, Seed: 42}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			if got := s.burst(tc.remaining); got != tc.want {
				t.Fatalf("rates %v remaining %d: %d, want %d", tc.rates, tc.remaining, got, tc.want)
			}
		}
	}
	s, _ := newSampler(Speculation{NextN: 3, AcceptRates: []float64{0.7, 0.5, 0.2}, Seed: 42}, 0)
	sum := 0
	const n = 200000
	for range n {
		sum += s.burst(100)
	}
	if mean := float64(sum) / n; math.Abs(mean-2.12) > 0.01 {
		t.Fatalf("mean %v, want 2.12", mean)
	}
}

// T4: accept-rate normalization and validation.
func TestT4AcceptRates(t *testing.T) {
	for _, tc := range []struct {
		nextn int
		in    string
		want  []float64
	}{
		{3, "1, 0.5", []float64{1, 0.5, 0}},
		{2, "1,0.5,0.25", []float64{1, 0.5}},
	} {
		got, err := ParseAcceptRates(tc.nextn, tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Fatalf("%q: %v %v", tc.in, got, err)
		}
	}
	for _, bad := range []string{"nan", "inf", "-0.1", "1.1", "not-a-rate"} {
		if _, err := ParseAcceptRates(2, bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	if got, _ := NormalizeAcceptRates(2, nil); !slices.Equal(got, []float64{0.85, 0.3}) {
		t.Fatalf("default %v", got)
	}
	cfg := mtp(cfg4(8, 16, 2, false), 1)
	cfg.Scale.DecodeSpeedup = 2
	if _, err := New(cfg); err == nil {
		t.Fatal("decode_speedup 2 with speculation accepted")
	}
	cfg.Spec.NextN = 6
	cfg.Scale.DecodeSpeedup = 1
	if _, err := New(cfg); err == nil {
		t.Fatal("nextn 6 accepted")
	}
}

// Ranks draw independent, reproducible speculative streams.
func TestSpeculationSeededPerRank(t *testing.T) {
	run := func(seed uint64) []int {
		cfg := mtp(cfg4(64, 64, 8, false), 0.5, 0.5)
		cfg.Spec.Seed = 42
		w, err := NewWorker(cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		for r, rk := range w.Ranks {
			for i := range 4 {
				sgSubmit(t, rk, uint64(10*r+i+1), span(uint32(100*i), uint32(100*i+4)), 20)
			}
		}
		var out []int
		now := timing.Time(0)
		for !w.Empty() {
			p := w.Step(now)
			now = max(p.End, now+1)
			out = append(out, len(p.Signals))
		}
		return out
	}
	a, b := run(42), run(42)
	if !slices.Equal(a, b) {
		t.Fatal("not reproducible")
	}
	w, _ := NewWorker(mtp(cfg4(64, 64, 8, false), 0.5, 0.5), 2)
	s0, s1 := w.Ranks[0].(*Core).spec, w.Ranks[1].(*Core).spec
	same := true
	for range 32 {
		if s0.burst(10) != s1.burst(10) {
			same = false
		}
	}
	if same {
		t.Fatal("ranks share a speculative stream")
	}
}
