package engine

import (
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// sgcfg is the reference SGLang test setup: page size page, blocks pages,
// the given chunk budget, polynomial unscaled timing, caching and events on.
func sgcfg(page, blocks, chunk int) Config {
	sg := DefaultSGLang()
	sg.ChunkedPrefillSize = chunk
	return Config{
		Policy: SGLang, BlockSize: page, NumBlocks: blocks, MaxSeqs: 256,
		PrefixCaching: true, Model: timing.Polynomial{}, Events: true, SGLang: sg,
	}
}

func mustSG(t *testing.T, cfg Config) *SGLangCore {
	t.Helper()
	c, err := NewSGLang(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sgSubmit(t *testing.T, c Rank, id uint64, prompt []uint32, out int) {
	t.Helper()
	if err := c.Submit(Request{ID: id, Prompt: prompt, MaxOutput: out}); err != nil {
		t.Fatal(err)
	}
}

// rankDriver steps any rank the way the reference tests do and checks the
// KV event stream with a router-style indexer.
type rankDriver struct {
	t   *testing.T
	c   Rank
	now timing.Time
	idx map[uint64]bool
	ids uint64
}

func (d *rankDriver) step() Pass {
	p := d.c.Step(d.now)
	d.now = max(p.End, d.now+timing.FromMs(1))
	if d.idx == nil {
		d.idx = map[uint64]bool{}
	}
	for _, e := range p.Events {
		if e.ID != d.ids {
			d.t.Fatalf("event id %d, want %d", e.ID, d.ids)
		}
		d.ids++
		switch e.Kind {
		case kv.Stored:
			if e.HasParent && !d.idx[e.Parent] {
				d.t.Fatalf("stored with dangling parent %x", e.Parent)
			}
			for _, b := range e.Blocks {
				if d.idx[b.BlockHash] {
					d.t.Fatalf("re-store of %x", b.BlockHash)
				}
				d.idx[b.BlockHash] = true
			}
		case kv.Removed:
			for _, h := range e.Removed {
				if !d.idx[h] {
					d.t.Fatalf("remove of unknown %x", h)
				}
				delete(d.idx, h)
			}
		}
	}
	q := *p
	q.Signals = slices.Clone(p.Signals)
	q.Admissions = slices.Clone(p.Admissions)
	return q
}

func (d *rankDriver) drain(limit int) (passes []Pass) {
	d.t.Helper()
	for i := 0; !d.c.Empty(); i++ {
		if i == limit {
			d.t.Fatalf("not empty after %d passes", limit)
		}
		passes = append(passes, d.step())
	}
	return passes
}

func TestS1PlannedOutputs(t *testing.T) {
	c := mustSG(t, sgcfg(4, 100, 8))
	if err := c.Submit(Request{ID: 1, Prompt: span(1, 6), Planned: []uint32{111, 222, 333}}); err != nil {
		t.Fatal(err)
	}
	d := rankDriver{t: t, c: c}
	var toks []uint32
	for _, p := range d.drain(10) {
		for _, s := range p.Signals {
			toks = append(toks, s.Token)
		}
	}
	if !slices.Equal(toks, []uint32{111, 222, 333}) {
		t.Fatalf("tokens %v", toks)
	}
}

// S2–S4: the chunk budget cases of spec §3.5 (page 4, chunk 8).
func TestS2toS4PrefillBudgets(t *testing.T) {
	admit := func(c *SGLangCore) {
		var rej []Signal
		c.admit(&rej)
		if len(rej) > 0 {
			t.Fatalf("rejected %+v", rej)
		}
	}
	t.Run("S2", func(t *testing.T) {
		c := mustSG(t, sgcfg(4, 1000, 8))
		sgSubmit(t, c, 1, span(0, 6), 3)
		admit(c)
		if st := c.state(c.batch[0], false); st.Materialized != 6 || st.Allocated != 8 {
			t.Fatalf("%+v", st)
		}
	})
	t.Run("S3", func(t *testing.T) {
		c := mustSG(t, sgcfg(4, 3, 8))
		sgSubmit(t, c, 1, span(0, 16), 2)
		admit(c)
		if len(c.batch) != 1 || c.batch[0].computed != 8 {
			t.Fatalf("batch %d", len(c.batch))
		}
	})
	t.Run("S4", func(t *testing.T) {
		c := mustSG(t, sgcfg(4, 1000, 8))
		sgSubmit(t, c, 1, span(0, 7), 1)
		sgSubmit(t, c, 2, span(100, 108), 1)
		admit(c)
		if len(c.batch) != 1 || c.batch[0].id != 1 || c.waiting.front().id != 2 {
			t.Fatalf("batch %d waiting %v", len(c.batch), c.WaitingIDs())
		}
	})
}

// S5: decode page growth 8 → 8 → 12.
func TestS5DecodePageGrowth(t *testing.T) {
	c := mustSG(t, sgcfg(4, 16, 8))
	sgSubmit(t, c, 1, span(0, 6), 10)
	d := rankDriver{t: t, c: c}
	var alloc []int
	for range 3 {
		d.step()
		st, _ := c.State(1)
		alloc = append(alloc, st.Allocated)
	}
	if !slices.Equal(alloc, []int{8, 8, 12}) {
		t.Fatalf("allocations %v", alloc)
	}
}

// S6: decode_speedup 4 gives a 4× shorter decode step than 1 (speedup 2).
func TestS6DecodeSpeedup(t *testing.T) {
	decode := func(ds float64) float64 {
		cfg := sgcfg(4, 64, 8)
		cfg.Scale = timing.Scale{Speedup: 2, DecodeSpeedup: ds}
		c := mustSG(t, cfg)
		sgSubmit(t, c, 1, span(0, 4), 5)
		d := rankDriver{t: t, c: c}
		d.step()
		p := d.step() // decode only
		return (p.End - p.Start).Ms()
	}
	if r := decode(1) / decode(4); math.Abs(r-4) > 1e-3 {
		t.Fatalf("ratio %v", r)
	}
}

// S7: retraction picks the runner with the fewest outputs, keeps its
// tokens and frees its pages; it counts as a preemption.
func TestS7Retraction(t *testing.T) {
	cfg := sgcfg(4, 4, 8)
	cfg.SGLang.Conservativeness = 0
	c := mustSG(t, cfg)
	sgSubmit(t, c, 1, span(0, 4), 10)
	d := rankDriver{t: t, c: c}
	for range 3 {
		d.step()
	}
	if err := c.Submit(Request{ID: 2, Prompt: span(100, 104), Planned: []uint32{21, 22, 23}}); err != nil {
		t.Fatal(err)
	}
	p := d.step()
	if a, _ := c.State(1); a.Generated != 4 || a.Allocated != 8 {
		t.Fatalf("runner 1 %+v", a)
	}
	if b, _ := c.State(2); b.Generated != 1 || b.Allocated != 8 || p.Signals[len(p.Signals)-1].Token != 21 {
		t.Fatalf("runner 2 %+v signals %+v", b, p.Signals)
	}
	p = d.step()
	b, _ := c.State(2)
	if !b.Retracted || b.Materialized != 0 || b.Allocated != 0 || b.Generated != 1 || b.Length != 5 {
		t.Fatalf("retracted %+v", b)
	}
	if p.Metrics.Preemptions != 1 || p.Counters.Retractions != 1 || p.FPM.QueuedDecode != 1 {
		t.Fatalf("metrics %+v counters %+v", p.Metrics, p.Counters)
	}
	d.drain(100)
	if m := c.Metrics(); m.Retractions < 1 || m.Preemptions != m.Retractions {
		t.Fatalf("final %+v", m)
	}
}

// S8: the prompt is matchable in the tree after one decode token.
func TestS8DecodedPrefixCached(t *testing.T) {
	c := mustSG(t, sgcfg(4, 64, 8))
	sgSubmit(t, c, 1, span(0, 4), 3)
	(&rankDriver{t: t, c: c}).step()
	if got := c.Tree().Peek([]uint64{kv.LocalHash(span(0, 4))}); got != 1 {
		t.Fatalf("cached pages %d", got)
	}
}

// S9: pages held after a prefill+decode pass.
func TestS9ActiveBlocks(t *testing.T) {
	c := mustSG(t, sgcfg(4, 32, 8))
	sgSubmit(t, c, 1, span(0, 6), 2)
	p := (&rankDriver{t: t, c: c}).step()
	done := 0
	for _, s := range p.Signals {
		if s.Completed {
			done++
		}
	}
	if p.Metrics.ActiveBlocks != 2 || done != 0 {
		t.Fatalf("active %d completed %d", p.Metrics.ActiveBlocks, done)
	}
}

type sig struct {
	id   uint64
	done bool
}

func sigs(p Pass) []sig {
	var out []sig
	for _, s := range p.Signals {
		out = append(out, sig{s.ID, s.Completed})
	}
	return out
}

// S10 (and V13 on the vLLM core): MTP bursts in stable order.
func TestS10V13MTPBurstOrder(t *testing.T) {
	spec := Speculation{NextN: 2, AcceptRates: []float64{1, 1}}
	v := cfg4(16, 16, 4, false)
	v.Spec = spec
	s := sgcfg(4, 16, 16)
	s.Spec = spec
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"vllm", v}, {"sglang", s}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewRank(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			sgSubmit(t, c, 1, span(0, 4), 5)
			sgSubmit(t, c, 2, span(100, 104), 8)
			d := rankDriver{t: t, c: c}
			if p := d.step(); len(p.Signals) != 6 {
				t.Fatalf("pass 1: %v", sigs(p))
			}
			p := d.step()
			want := []sig{{1, false}, {1, true}, {2, false}, {2, false}, {2, false}}
			if !slices.Equal(sigs(p), want) || p.FPM.DecodeRequests != 2 {
				t.Fatalf("pass 2: %v decode %d", sigs(p), p.FPM.DecodeRequests)
			}
			if p.Counters.AcceptedTokens != 5 || p.Counters.DecodeForwards != 2 {
				t.Fatalf("counters %+v", p.Counters)
			}
			if core, ok := c.(*Core); ok {
				st, _ := core.State(2)
				if st.Generated != 6 || st.Length-st.Computed != 1 {
					t.Fatalf("long %+v", st)
				}
			}
		})
	}
}

// S11: LPM moves the request with a cached prefix to the front.
func TestS11LPMReorder(t *testing.T) {
	cfg := sgcfg(1, 256, 8)
	cfg.SGLang.Schedule = LPM
	c := mustSG(t, cfg)
	sgSubmit(t, c, 1, []uint32{1, 2, 3, 4, 5}, 0)
	(&rankDriver{t: t, c: c}).drain(5)
	sgSubmit(t, c, 2, []uint32{9, 8, 7}, 1)
	sgSubmit(t, c, 3, []uint32{1, 2, 3, 4, 5, 6, 7}, 1)
	c.sortLPM()
	if got := c.WaitingIDs(); !slices.Equal(got, []uint64{3, 2}) {
		t.Fatalf("order %v", got)
	}
}

// S12: duplicates without a cached prefix are deprioritized.
func TestS12LPMDuplicates(t *testing.T) {
	cfg := sgcfg(1, 4096, 8)
	cfg.SGLang.Schedule = LPM
	c := mustSG(t, cfg)
	for i := range 33 {
		sgSubmit(t, c, uint64(i+1), span(0, 32), 1)
	}
	sgSubmit(t, c, 100, span(500, 532), 1)
	c.sortLPM()
	if got := c.WaitingIDs(); got[0] != 1 || got[1] != 100 {
		t.Fatalf("order %v", got[:3])
	}
}

// S14, S15: FPM of the combined prefill+decode pass.
func TestS14S15FPM(t *testing.T) {
	c := mustSG(t, sgcfg(4, 16, 16))
	sgSubmit(t, c, 1, span(0, 8), 3)
	d := rankDriver{t: t, c: c}
	f := d.step().FPM
	if f.PrefillRequests != 1 || f.PrefillTokens != 8 || f.DecodeRequests != 1 || f.QueuedPrefill != 0 {
		t.Fatalf("S14 %+v", f)
	}
	sgSubmit(t, c, 2, span(100, 104), 3)
	if f = d.step().FPM; f.PrefillRequests != 1 || f.DecodeRequests != 2 {
		t.Fatalf("S15 %+v", f)
	}
}

// S16, S17: prefix metrics, and a fully cached zero-output request.
func TestS16S17PrefixMetrics(t *testing.T) {
	c := mustSG(t, sgcfg(4, 64, 8))
	d := rankDriver{t: t, c: c}
	sgSubmit(t, c, 1, span(0, 8), 1)
	p := d.step()
	if p.Counters.CacheHitTokens != 0 || p.Counters.CacheTotalTokens != 8 {
		t.Fatalf("S16 first %+v", p.Counters)
	}
	d.drain(5)
	sgSubmit(t, c, 2, span(0, 8), 2)
	p = d.step()
	if h := p.Counters.CacheHitTokens; h == 0 || h > p.Counters.CacheTotalTokens {
		t.Fatalf("S16 repeat %+v", p.Counters)
	}
	d.drain(5)
	sgSubmit(t, c, 3, span(0, 8), 0)
	p = d.step()
	if p.Counters.CacheHitTokens != 8 || p.Counters.CacheTotalTokens != 8 || p.FPM.PrefillRequests != 0 || p.FPM.DecodeRequests != 0 {
		t.Fatalf("S17 %+v %+v", p.Counters, p.FPM)
	}
	if len(p.Signals) != 1 || p.Signals[0].HasToken || !p.Signals[0].Completed || p.Signals[0].Rejected {
		t.Fatalf("S17 signals %+v", p.Signals)
	}
}

func TestS18FIFO(t *testing.T) {
	c := mustSG(t, sgcfg(4, 256, 8))
	for i := range 5 {
		sgSubmit(t, c, uint64(i+1), span(uint32(10*i), uint32(10*i+6)), 3)
	}
	n := 0
	for _, p := range (&rankDriver{t: t, c: c}).drain(20) {
		n += len(p.Signals)
	}
	if n != 15 {
		t.Fatalf("%d signals", n)
	}
}

// The whole cached prefix is matched, not only the part inside the first
// chunk (the reference's SGLang issue 13188): a cached prefix longer than a
// chunk is never recomputed.
func TestSGLangMatchesWholePrefixAcrossChunks(t *testing.T) {
	for _, tc := range []struct {
		name          string
		prompt        []uint32
		computed, hit int
	}{
		{"fully cached, 3 chunks long", span(0, 24), 0, 24},
		{"cached 24 of 40", append(span(0, 24), span(100, 116)...), 16, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustSG(t, sgcfg(4, 64, 8))
			d := rankDriver{t: t, c: c}
			sgSubmit(t, c, 1, span(0, 24), 1)
			d.drain(10)
			sgSubmit(t, c, 2, tc.prompt, 2)
			computed, reused := 0, 0
			for _, p := range d.drain(10) {
				computed += p.FPM.PrefillTokens
				for _, a := range p.Admissions {
					reused = max(reused, a.Reused)
				}
			}
			if computed != tc.computed || reused < tc.hit {
				t.Fatalf("computed %d (want %d), reused %d (want ≥ %d)", computed, tc.computed, reused, tc.hit)
			}
		})
	}
}

// A request that can never fit is rejected instead of blocking the queue.
func TestSGLangRejectsRequestThatCanNeverRun(t *testing.T) {
	c := mustSG(t, sgcfg(4, 4, 8))
	sgSubmit(t, c, 1, span(0, 20), 1)
	sgSubmit(t, c, 2, span(100, 104), 2)
	var rejected []uint64
	done := map[uint64]bool{}
	for _, p := range (&rankDriver{t: t, c: c}).drain(20) {
		for _, s := range p.Signals {
			if s.Rejected {
				rejected = append(rejected, s.ID)
			} else if s.Completed {
				done[s.ID] = true
			}
		}
	}
	if !slices.Equal(rejected, []uint64{1}) || !done[2] || c.PagePool().Available()+c.Tree().Evictable()/4 != 4 {
		t.Fatalf("rejected %v done %v", rejected, done)
	}
}

// Many overlapping requests under memory pressure: every request finishes,
// pages are conserved, the event stream stays consistent, LPM and FIFO.
func TestSGLangPressureConservation(t *testing.T) {
	for _, pol := range []SchedulePolicy{FCFS, LPM} {
		for _, page := range []int{1, 4} {
			cfg := sgcfg(page, 96/page, 16)
			cfg.SGLang.Schedule = pol
			cfg.SGLang.Conservativeness = 0.1 // admit optimistically: retract later
			cfg.SGLang.ClipMaxNewTokens = 4
			cfg.Spec = Speculation{NextN: 2, AcceptRates: []float64{0.8, 0.5}, Seed: 7}
			c := mustSG(t, cfg)
			for i := range 24 {
				p := append(span(0, uint32(4+i%3*4)), span(uint32(1000*i+1000), uint32(1000*i+1010))...)
				sgSubmit(t, c, uint64(i+1), p, 12+i%5)
			}
			d := rankDriver{t: t, c: c}
			tokens := 0
			for _, p := range d.drain(2000) {
				for _, s := range p.Signals {
					if s.Rejected {
						t.Fatalf("page %d: rejected %d", page, s.ID)
					}
					if s.HasToken {
						tokens++
					}
				}
			}
			want := 0
			for i := range 24 {
				want += 12 + i%5
			}
			m := c.Metrics()
			if tokens != want || c.tree.Protected() != 0 || c.pool.Available()*page+c.tree.Evictable() != 96 {
				t.Fatalf("page %d: tokens %d/%d protected %d available %d evictable %d", page, tokens, want,
					c.tree.Protected(), c.pool.Available(), c.tree.Evictable())
			}
			if m.Retractions == 0 || m.AcceptedTokens < m.DecodeForwards {
				t.Fatalf("page %d: metrics %+v", page, m)
			}
		}
	}
}

// SGLang KV events carry the router's hashes: block hash chained from the
// local hashes, tokens hash = local hash (also with page 1, whose tree keys
// are the tokens themselves); a repeat prompt publishes nothing new.
func TestSGLangEventPayload(t *testing.T) {
	cfg := sgcfg(1, 64, 8)
	cfg.DPRank = 3
	c := mustSG(t, cfg)
	d := rankDriver{t: t, c: c}
	sgSubmit(t, c, 1, []uint32{4, 5}, 1)
	p := d.step()
	l4, l5 := kv.LocalHash([]uint32{4}), kv.LocalHash([]uint32{5})
	want := []kv.StoredBlock{{BlockHash: l4, TokensHash: l4}, {BlockHash: kv.ChainHash(l4, l5), TokensHash: l5}}
	// The prompt pages, then the first output page (it fills at once).
	if len(p.Events) != 2 || p.Events[0].HasParent || p.Events[0].DPRank != 3 || !slices.Equal(p.Events[0].Blocks, want) ||
		p.Events[1].Parent != want[1].BlockHash || len(p.Events[1].Blocks) != 1 {
		t.Fatalf("events %+v", p.Events)
	}
	d.drain(5)
	sgSubmit(t, c, 2, []uint32{4, 5}, 0)
	if p := d.step(); len(p.Events) != 0 {
		t.Fatalf("repeat published %+v", p.Events)
	}
}

func TestSGLangEmptyPrompt(t *testing.T) {
	c := mustSG(t, sgcfg(4, 16, 8))
	sgSubmit(t, c, 1, nil, 2)
	if r := drainAll(t, c, 10); r.tokens[1] != 2 || len(r.completed) != 1 {
		t.Fatalf("%+v", r)
	}
}

// SGLang ranks behind a DP worker: each rank is its own core; counters and
// retractions sum over ranks.
func TestSGLangWorkerRanks(t *testing.T) {
	cfg := sgcfg(4, 8, 8)
	cfg.SGLang.Conservativeness = 0
	cfg.SGLang.ClipMaxNewTokens = 1
	w, err := NewWorker(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	for r, rk := range w.Ranks {
		if _, ok := rk.(*SGLangCore); !ok {
			t.Fatalf("rank %d is %T", r, rk)
		}
		for i := range 3 {
			sgSubmit(t, rk, uint64(10*r+i+1), span(uint32(100*i+1000*r), uint32(100*i+1000*r+6)), 8)
		}
	}
	now, tokens := timing.Time(0), 0
	var sum Counters
	for i := 0; !w.Empty(); i++ {
		if i > 500 {
			t.Fatal("worker stuck")
		}
		p := w.Step(now)
		now = max(p.End, now+1)
		sum.add(p.Counters)
		for _, s := range p.Signals {
			if s.HasToken {
				tokens++
			}
		}
	}
	m := w.Metrics()
	if tokens != 48 || m.Counters != sum || m.Retractions == 0 || m.Preemptions != m.Retractions {
		t.Fatalf("tokens %d metrics %+v sum %+v", tokens, m, sum)
	}
}

// max_prefill_tokens below the chunk size does not stall mid-size prompts.
func TestSGLangSmallPrefillBudget(t *testing.T) {
	cfg := sgcfg(4, 64, 8)
	cfg.SGLang.MaxPrefillTokens = 4
	c := mustSG(t, cfg)
	sgSubmit(t, c, 1, span(0, 6), 2)
	sgSubmit(t, c, 2, span(100, 106), 2)
	if r := drainAll(t, c, 20); len(r.completed) != 2 || len(r.rejected) != 0 {
		t.Fatalf("%+v", r)
	}
}
