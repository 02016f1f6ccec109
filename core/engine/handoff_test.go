package engine

import (
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// S13: an SGLang prefill worker's terminal signal carries the line-rate
// transfer time of its prompt, and (unlike the vLLM core) its single token
// costs the ordinary decode step.
func TestS13SGLangPrefillHandoffDelay(t *testing.T) {
	cfg := sgcfg(1, 64, 8192)
	cfg.Prefill = &Handoff{KVBytesPerToken: 1e6, BandwidthGBps: 1}
	c := mustSG(t, cfg)
	sgSubmit(t, c, 1, span(0, 8), 1)
	p := c.Step(0)
	if len(p.Signals) != 1 || !p.Signals[0].Completed || !p.Signals[0].HasToken || p.Signals[0].HandoffMs != 8.0 || !c.Empty() {
		t.Fatalf("signals %+v, want one completed token with handoff_delay_ms 8.0", p.Signals)
	}
	if pre := cfg.Scale.Prefill(cfg.Model, 1, 8, 0); p.End <= pre {
		t.Fatalf("pass ends at %v: the decode step (beyond the prefill %v) is charged on SGLang", p.End, pre)
	}
}

// ranks builds a vLLM-shaped and an SGLang rank of blocks 4-token blocks.
func ranks(t *testing.T, blocks int, mod func(*Config)) map[string]Rank {
	v := cfg4(blocks, 256, 8, true)
	s := sgcfg(4, blocks, 8192)
	mod(&v)
	mod(&s)
	return map[string]Rank{"vllm": mustCore(t, v), "sglang": mustSG(t, s)}
}

// A holding source keeps a finished prefill's KV until Release; the blocks
// are then free (or cached) again.
func TestSourceHoldsUntilRelease(t *testing.T) {
	for name, c := range ranks(t, 16, func(c *Config) { c.Prefill = &Handoff{Hold: true} }) {
		if err := c.Submit(Request{ID: 7, Prompt: span(0, 16), MaxOutput: 1}); err != nil {
			t.Fatal(err)
		}
		p := c.Step(0)
		if len(p.Signals) != 1 || !p.Signals[0].Completed {
			t.Fatalf("%s: signals %+v", name, p.Signals)
		}
		m := c.Metrics()
		if m.Holds != 1 || m.ActiveBlocks < 4 || c.Empty() {
			t.Fatalf("%s: after the prefill %+v, want the hold's 4+ blocks active", name, m)
		}
		if c.Release(8) || !c.Release(7) || c.Release(7) {
			t.Fatalf("%s: Release must free exactly the held request, once", name)
		}
		c.Step(timing.FromMs(100))
		if m := c.Metrics(); m.Holds != 0 || !c.Empty() || name == "vllm" && m.ActiveBlocks != 0 {
			t.Fatalf("%s: after release %+v", name, m)
		}
	}
}

// A destination reserves the whole prompt at a pass start, reusing what it
// has cached (Missing counts only the rest), and decodes it after Activate
// with no prefill charged; its first token comes from that first pass.
func TestDestinationReserveActivate(t *testing.T) {
	for name, c := range ranks(t, 64, func(c *Config) { c.Decode = true }) {
		// Seed the destination's cache with a 16-token prompt.
		if err := c.Submit(Request{ID: 1, Prompt: span(0, 16), MaxOutput: 1}); err != nil {
			t.Fatal(err)
		}
		now := timing.Time(0)
		for !c.Empty() {
			p := c.Step(now)
			now = max(p.End, now+1)
		}
		prompt := append(span(0, 16), span(100, 106)...) // 22 tokens: 4 resident blocks, 2 missing (the partial one whole)
		if why, err := c.Reserve(Request{ID: 2, Prompt: prompt, MaxOutput: 3}); err != nil || why != NotRejected {
			t.Fatalf("%s: reserve: %v %v", name, why, err)
		}
		p := c.Step(now)
		if len(p.Reserved) != 1 || p.Reserved[0] != (Reservation{ID: 2, Resident: 16, Missing: 8}) || len(p.Signals) != 0 {
			t.Fatalf("%s: reserved %+v signals %+v, want id 2 with 16 resident and 8 missing", name, p.Reserved, p.Signals)
		}
		if p.End != now {
			t.Fatalf("%s: a reservation costs no time", name)
		}
		if !c.Activate(2) || c.Activate(2) {
			t.Fatalf("%s: Activate must take the reservation once", name)
		}
		var tokens int
		for start := now; !c.Empty(); {
			p := c.Step(now)
			if tokens == 0 && p.End-start > timing.FromMs(60) {
				t.Fatalf("%s: first pass %v: no prefill may be charged", name, p.End-start)
			}
			for _, s := range p.Signals {
				tokens += b2i(s.HasToken)
			}
			now = max(p.End, now+1)
		}
		if tokens != 3 {
			t.Fatalf("%s: %d tokens, want 3", name, tokens)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Cancel drops a pending or a granted reservation with its blocks; a prompt
// past the whole pool is rejected at Reserve.
func TestDestinationCancelAndReject(t *testing.T) {
	for name, c := range ranks(t, 8, func(c *Config) { c.Decode = true }) {
		if why, _ := c.Reserve(Request{ID: 9, Prompt: span(0, 40), MaxOutput: 1}); why != KVCapacity {
			t.Fatalf("%s: 10 blocks on 8: %v, want kv_capacity", name, why)
		}
		for id := uint64(1); id <= 3; id++ {
			if why, err := c.Reserve(Request{ID: id, Prompt: span(uint32(id)*100, uint32(id)*100+12), MaxOutput: 1}); why != NotRejected || err != nil {
				t.Fatal(why, err)
			}
		}
		p := c.Step(0) // 3 blocks each: two fit in 8, the third waits
		if len(p.Reserved) != 2 || c.Metrics().Reserved != 3 {
			t.Fatalf("%s: reserved %+v metrics %+v", name, p.Reserved, c.Metrics())
		}
		if !c.Cancel(3) || !c.Cancel(1) || c.Cancel(1) {
			t.Fatalf("%s: cancel", name)
		}
		if !c.Cancel(2) || !c.Empty() || c.Metrics().Reserved != 0 {
			t.Fatalf("%s: after canceling everything: %+v", name, c.Metrics())
		}
		if m := c.Metrics(); name == "vllm" && m.ActiveBlocks != 0 {
			t.Fatalf("%s: %d blocks still active", name, m.ActiveBlocks)
		}
	}
}
